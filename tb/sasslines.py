"""Hand-written SASS trace lines (Accel-Sim's format) with their bank cycles derived by hand
from the bank rule: 32 banks of 4 bytes; ldmatrix / stmatrix per 8-row matrix the busiest bank
quad's distinct rows (h200) or, matrices mixed, the busiest quad's rows (packed); plain loads
and stores per 128-byte phase the busiest bank's distinct words (h200) or over the warp (packed).
Used by tb/sim/test_sass.py and the RTL replay test."""

BASE = 0x7F0000000000
HEADER = f"""-kernel name = tile
-kernel id = 1
-shmem = 16384
-shmem base_addr = 0x{BASE:016x}
-accelsim tracer version = 5

#traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width [adrrescompress?] [mem_addresses] immediate

#BEGIN_TB

thread block = 1,0,0

warp = 3
insts = 9
"""


#: the file line of the first instruction after HEADER
FIRST = HEADER.count("\n") + 1


def listed(addrs):
    return "0 " + " ".join(f"0x{BASE + a:x}" for a in addrs)


def deltas(addrs):
    return f"2 0x{BASE + addrs[0]:x} " + " ".join(str(b - a) for a, b in zip(addrs, addrs[1:]))


#: Swizzle<3,4,3> rows: thread t gives row t % 8 of matrix t // 8, its 16-byte chunk XORed with the row
SWIZZLED = [(t % 8) * 128 + (((t // 8) ^ (t % 8)) << 4) for t in range(32)]
#: the same rows unswizzled: the 8 rows of a matrix share one bank quad, 8 clocks a matrix
#: (h200, 32 in all); mixing matrices, each of the four quads holds 8 rows (packed, 8)
PLAIN = [(t % 8) * 128 + ((t // 8) << 4) for t in range(32)]

#: (line, opcode, h200 cycles, packed cycles), each derived by hand
CASES = [
    (f"0010 ffffffff 1 R4 LDSM.16.M88.4 1 R2 2 {listed(SWIZZLED)} 0", "LDSM.16.M88.4", 4, 4),
    (f"0020 ffffffff 1 R8 LDSM.16.MT88.4 1 R2 2 {deltas(PLAIN)} 0", "LDSM.16.MT88.4", 32, 8),
    # .x1: lanes 0-7 give the rows; the others are not used (here inactive)
    ("0030 000000ff 1 R9 LDSM.16.M88 1 R2 2 1 0x7f0000000400 16 0", "LDSM.16.M88", 1, 1),
    # .x2 of 16 consecutive 16-byte rows: 2 matrices, each its 8 rows in 8 different quads
    ("0040 ffffffff 1 R9 STSM.16.M88.2 2 R2 R4 2 1 0x7f0000000000 16 0", "STSM.16.M88.2", 2, 2),
    # LDS.32, lanes 4 bytes apart: one word a bank
    ("0050 ffffffff 1 R1 LDS 1 R2 4 1 0x7f0000000000 4 0", "LDS", 1, 1),
    # LDS.64 at 16-byte steps: each 16-lane phase touches 32 words, 2 in each bank
    ("0060 ffffffff 1 R1 LDS.64 1 R2 8 1 0x7f0000000000 16 0", "LDS.64", 4, 4),
    # LDS.128 contiguous: four phases of eight lanes, 128 bytes each
    ("0070 ffffffff 1 R1 LDS.128 1 R2 16 1 0x7f0000000000 16 0", "LDS.128", 4, 4),
    # LDS.U8, every lane the same byte: one word, broadcast
    ("0080 ffffffff 1 R1 LDS.U8 1 R2 1 1 0x7f0000000010 0 0", "LDS.U8", 1, 1),
    # STS.128 at 128-byte steps: 8 lanes a phase in banks 0-3, 8 words each; 4 phases
    ("0090 ffffffff 0 STS.128 2 R2 R4 16 1 0x7f0000000000 128 0", "STS.128", 32, 32),
    # half the lanes of an LDS.32 at 128-byte steps: 16 words in bank 0
    ("00a0 0000ffff 1 R1 LDS 1 R2 4 1 0x7f0000000000 128 0", "LDS", 16, 16),
]


#: sm_100a opcodes, the .b8 forms as ptxas spells them (tb/sim/test_sass.py checks the spelling
#: with the compiler): a decompressing LDSM .m8n16 .x4 of 32 consecutive 16-byte rows, and an
#: STSM .m16n8 .x2 .trans .b8 of 16 (the lanes it uses active)
B8_ROWS = [16 * t for t in range(32)]
B8_LINES = [f"0100 ffffffff 1 R4 LDSM.U4x16P64TO8.M816.4 1 R2 2 {listed(B8_ROWS)} 0",
            f"0110 0000ffff 0 STSM.8.MT168.2 2 R2 R4 2 {listed([512 + a for a in B8_ROWS[:16]])} 0"]


def trace_text(lines):
    return HEADER + "\n".join(lines) + "\n#END_TB\n"
