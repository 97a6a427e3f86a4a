"""The bank rule as a small C header, for C and C++ simulators: generated from the model's
tables, never written by hand (``tensorlsu cheader --out tensorlsu_banks.h``).

The header has no dependencies beyond ``<stdint.h>`` and holds:

- ``TLSU_FORMS``: every ldmatrix / stmatrix shape and .num (.trans and the element type do not
  change the cost), with the row addresses it uses (those of threads 0 ... rows-1) and the rows
  of one matrix (:func:`tensorlsu.sim.layouts.row_count`, :func:`~.layouts.rows_per_matrix`);
- ``tlsu_matrix_wavefronts(rows, rows_per_matrix, addr, policy)``: :func:`model.wavefronts`
  of an ldmatrix / stmatrix (-1 for a row address not 16-byte aligned);
- ``tlsu_shared_wavefronts(width, addr, active, policy)``: :func:`model.shared_wavefronts` of
  an LDS / STS (-1 for a width it does not know or a misaligned active lane).

tb/sim/test_cheader.py compiles it and checks it against the model on random patterns.
"""

from __future__ import annotations

from . import layouts, model, ptx

__all__ = ["FORMS", "generate"]

#: Every ldmatrix / stmatrix (shape, .num), each with a text the front end accepts.
FORMS = {
    ("ldmatrix", "m8n8", n): f"ldmatrix.sync.aligned.m8n8.x{n}.shared.b16" for n in (1, 2, 4)
} | {
    ("ldmatrix", "m16n16", n): f"ldmatrix.sync.aligned.m16n16.x{n}.trans.shared.b8" for n in (1, 2)
} | {
    ("ldmatrix", "m8n16", n): f"ldmatrix.sync.aligned.m8n16.x{n}.shared.b8x16.b6x16_p32" for n in (1, 2, 4)
} | {
    ("stmatrix", "m8n8", n): f"stmatrix.sync.aligned.m8n8.x{n}.shared.b16" for n in (1, 2, 4)
} | {
    ("stmatrix", "m16n8", n): f"stmatrix.sync.aligned.m16n8.x{n}.trans.shared.b8" for n in (1, 2, 4)
}

_BODY = """
/* Distinct 16-byte rows in the busiest bank quad (a quad: 4 banks, 16 bytes; 8 quads). */
static inline int tlsu__busiest_quad(const uint32_t *addr, int n)
{
    int best = 0;
    for (int i = 0; i < n; ++i) {
        int seen = 0, count = 0;
        for (int j = 0; j < i; ++j)
            if (addr[j] == addr[i]) seen = 1;
        if (seen) continue;
        for (int j = 0; j < n; ++j) {
            int first = 1;
            if ((addr[j] / TLSU_ROW_BYTES) % TLSU_QUADS != (addr[i] / TLSU_ROW_BYTES) % TLSU_QUADS) continue;
            for (int k = 0; k < j; ++k)
                if (addr[k] == addr[j]) first = 0;
            count += first;
        }
        if (count > best) best = count;
    }
    return best;
}

/* Bank cycles of an ldmatrix / stmatrix whose threads 0 ... rows-1 give the row addresses
   addr[] (byte offsets in shared memory); rows_per_matrix from TLSU_FORMS. */
static inline int tlsu_matrix_wavefronts(int rows, int rows_per_matrix, const uint32_t *addr, int policy)
{
    (void)rows_per_matrix;  /* a group never spans two matrices: matrices are 8 or 16 rows */
    for (int t = 0; t < rows; ++t)
        if (addr[t] % TLSU_ROW_BYTES) return -1;
    if (policy == TLSU_H200) {
        int total = 0;
        for (int g = 0; g < rows; g += TLSU_GROUP_ROWS)
            total += tlsu__busiest_quad(addr + g, rows - g < TLSU_GROUP_ROWS ? rows - g : TLSU_GROUP_ROWS);
        return total;
    }
    int floor = (rows + TLSU_QUADS - 1) / TLSU_QUADS, busiest = tlsu__busiest_quad(addr, rows);
    return busiest > floor ? busiest : floor;
}

/* Distinct 4-byte words in the busiest bank among n words. */
static inline int tlsu__busiest_bank(const uint32_t *word, int n)
{
    int best = 0;
    for (int i = 0; i < n; ++i) {
        int seen = 0, count = 0;
        for (int j = 0; j < i; ++j)
            if (word[j] == word[i]) seen = 1;
        if (seen) continue;
        for (int j = 0; j < n; ++j) {
            int first = 1;
            if (word[j] % TLSU_BANKS != word[i] % TLSU_BANKS) continue;
            for (int k = 0; k < j; ++k)
                if (word[k] == word[j]) first = 0;
            count += first;
        }
        if (count > best) best = count;
    }
    return best;
}

/* Bank cycles of an LDS / STS of width bytes a thread (1, 2, 4, 8, 16) at the 32 lanes' byte
   addresses addr[], lane t active when bit t of active is set. */
static inline int tlsu_shared_wavefronts(int width, const uint32_t *addr, uint32_t active, int policy)
{
    uint32_t word[32 * 4];
    int n = 0, total = 0, per_lane, per_phase;
    if (width != 1 && width != 2 && width != 4 && width != 8 && width != 16) return -1;
    per_lane = width < 4 ? 1 : width / 4;
    per_phase = TLSU_WAVEFRONT_BYTES / (width < 4 ? 4 : width);
    for (int t = 0; t < 32; ++t)
        if ((active >> t & 1u) && addr[t] % (uint32_t)width) return -1;
    for (int p = 0; p < 32; p += per_phase) {
        if (policy == TLSU_H200) n = 0;
        for (int t = p; t < p + per_phase; ++t) {
            if (!(active >> t & 1u)) continue;
            for (int k = 0; k < per_lane; ++k) word[n++] = addr[t] / 4 + (uint32_t)k;
        }
        if (policy == TLSU_H200) total += tlsu__busiest_bank(word, n);
    }
    return policy == TLSU_H200 ? total : tlsu__busiest_bank(word, n);
}
"""


def generate() -> str:
    """The header's text."""
    rows = []
    for (op, shape, num), text in FORMS.items():
        ins = ptx.parse(text, "sm_100a")
        rows.append(f'    {{"{op}.{shape}.x{num}", {layouts.row_count(ins)}, {layouts.rows_per_matrix(ins)}}},')
    return f"""/* tensorlsu_banks.h: the shared-memory bank rule of ldmatrix / stmatrix and of LDS / STS,
   generated by tensorlsu.sim.cheader from the model's tables. Do not edit. */
#ifndef TENSORLSU_BANKS_H
#define TENSORLSU_BANKS_H
#include <stdint.h>

#define TLSU_H200 0     /* the H200's rule (measured) */
#define TLSU_PACKED 1   /* any 32 distinct banks a clock, matrices or phases mixed */
#define TLSU_BANKS {32}
#define TLSU_ROW_BYTES {layouts.ROW_BYTES}
#define TLSU_QUADS (TLSU_BANKS * 4 / TLSU_ROW_BYTES)
#define TLSU_GROUP_ROWS {model.GROUP_ROWS}
#define TLSU_WAVEFRONT_BYTES {model.WAVEFRONT_BYTES}

/* Every ldmatrix / stmatrix shape and .num: the row addresses it uses and a matrix's rows. */
typedef struct {{ const char *form; int rows; int rows_per_matrix; }} tlsu_form_t;
static const tlsu_form_t TLSU_FORMS[] = {{
{chr(10).join(rows)}
}};
#define TLSU_NFORMS {len(rows)}
{_BODY}
#endif
"""
