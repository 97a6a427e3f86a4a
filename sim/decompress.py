"""Sub-byte source formats of the decompressing ldmatrix forms.

A 16-byte source row holds 16 unsigned elements packed from bit 0 upwards, then padding:
``b4x16_p64`` 16 × 4 bits + 64 bits, ``b6x16_p32`` 16 × 6 bits + 32 bits. Each element lands
in the low bits of its own byte (docs/facts.md); the padding is never read.
"""

from __future__ import annotations

import numpy as np

__all__ = ["FORMATS", "decompress", "compress"]

#: Element width in bits of each source format.
FORMATS = {"b4x16_p64": 4, "b6x16_p32": 6}
_ELEMS = 16
_ROW = 16


def _check(rows: np.ndarray, fmt: str) -> int:
    if fmt not in FORMATS:
        raise ValueError(f"unknown source format {fmt!r} (expected one of {', '.join(FORMATS)})")
    if rows.shape[-1] != _ROW:
        raise ValueError(f"source rows must be {_ROW} bytes long, not {rows.shape[-1]}")
    return FORMATS[fmt]


def decompress(rows, fmt: str) -> np.ndarray:
    """``uint8[..., 16]`` packed rows → ``uint8[..., 16]`` elements, one per byte."""
    rows = np.asarray(rows, dtype=np.uint8)
    w = _check(rows, fmt)
    bits = np.unpackbits(rows, axis=-1, bitorder="little")[..., : w * _ELEMS]
    bits = bits.reshape(*rows.shape[:-1], _ELEMS, w)
    return (bits.astype(np.uint8) << np.arange(w, dtype=np.uint8)).sum(axis=-1, dtype=np.uint8)


def compress(elems, fmt: str) -> np.ndarray:
    """Inverse of :func:`decompress` (padding zero); elements must fit the format's width."""
    elems = np.asarray(elems, dtype=np.uint8)
    w = _check(elems, fmt)
    if np.any(elems >> w):
        raise ValueError(f"{fmt}: elements must be below {1 << w}")
    bits = (elems[..., None] >> np.arange(w, dtype=np.uint8)) & 1
    bits = bits.reshape(*elems.shape[:-1], _ELEMS * w)
    pad = np.zeros((*elems.shape[:-1], _ROW * 8 - _ELEMS * w), dtype=np.uint8)
    return np.packbits(np.concatenate([bits, pad], axis=-1), axis=-1, bitorder="little")
