"""One trace with a refusal of every kind and family, mixed with good records, through both
replay backends: the same verdict and reason record by record, and the good records after a
refusal bit-exact.

Expected values: the model (itself pinned by the H200 vectors) for every record's outcome;
the reason by the unit's error code the model's message names (docs/ports.md,
docs/tcgen05-cp.md). The RTL backend runs the trace in one simulation per Tensor Memory size
(the copies apart), each stmatrix's source beats sent whatever its verdict, so a refusal that left anything
behind would fail the records after it.
"""

import json

import deck
import regress
from conftest import DATA
from tensorlsu.cosim.backend import RtlBackend
from tensorlsu.sim import trace


def _records() -> list[dict]:
    golden = [json.loads(x) for x in (DATA / "h200_sm90.jsonl").read_text().splitlines()]
    tmem = [json.loads(x) for x in (DATA / "sm100_tmem.jsonl").read_text().splitlines()]
    cp = [json.loads(x) for x in (DATA / "sm100_cp.jsonl").read_text().splitlines()]
    good = {"ld": [r for r in golden if r["instr"].startswith("ldmatrix")][::9],
            "st": [r for r in golden if r["instr"].startswith("stmatrix")][::5],
            "wmma": [r for r in golden if r["instr"].startswith("wmma")][::60]}
    out = []

    def bad(r, **change):
        r = {k: v for k, v in r.items() if k != "expect"}
        r.update(change)
        return r
    for k, st in enumerate(good["st"]):
        a = list(st["addr"])
        rows = 8 * int(st["instr"].split(".x")[1][0])
        broken = [bad(st, addr=[a[0] + 4] + a[1:]),                                     # MISALIGNED
                  bad(st, addr=[a[1]] + a[1:]) if rows > 1 else None,                   # OVERLAP
                  bad(st, addr=[len(st["smem"]) // 2] + a[1:])]                         # OUT_OF_RANGE
        out += [good["ld"][k % len(good["ld"])], broken[k % 3] or broken[0], st]
    for k, w in enumerate(good["wmma"]):
        out.append(w)
        if w["instr"].endswith(".shared." + w["instr"].split(".")[-1]) or ".shared." in w["instr"]:
            out.append(bad(w, addr=w["addr"] + 16))                                     # MISALIGNED
            out.append(bad(w, stride=w.get("stride", 16) + 1))                          # STRIDE
    out += [r for r in tmem if "error" in r.get("expect", {})] + tmem[:6]
    out += [r for r in cp if "error" in r.get("expect", {})][:8] + cp[:3]
    # what the ports cannot carry, refused by the check both backends share
    st = good["st"][0]
    out += [bad(st, addr=[-16] + st["addr"][1:]), bad(st, regs=[w + [0] for w in st["regs"]]),
            bad(good["ld"][0], smem=""), bad(good["wmma"][0], stride=2 ** 32 + 16), good["st"][1]]
    return [{k: v for k, v in r.items() if k != "expect"} for r in out]


def _code(op: str, message: str) -> str:
    """The unit's error code the model's refusal of an ``op`` names."""
    if op == "tcgen05.cp":
        return deck.code_of(message, deck._CP_CODES).name
    if op.startswith("tcgen05"):
        return deck.code_of(message, deck._TMEM_CODES).name
    return regress.error_code(message).name


def test_every_refusal_kind_gives_one_verdict_through_both_backends():
    recs = list(trace.read([json.dumps(r) for r in _records()]))
    fams = {r.ins.op for r in recs}
    assert fams == {"ldmatrix", "stmatrix", "wmma.load", "tcgen05.ld", "tcgen05.st", "tcgen05.cp"}
    by_model = list(trace.run(recs, trace.ModelBackend()))
    refused = [o for o in by_model if "error" in o.produced]
    assert len(refused) >= 30 and len(by_model) - len(refused) >= 40
    # the copies apart, each part on the unit `tensorlsu replay` builds for it (the builds of
    # tb/system/test_tmem_rtl.py, reused)
    by_rtl = {}
    for part in ([r for r in recs if r.ins.op == "tcgen05.cp"], [r for r in recs if r.ins.op != "tcgen05.cp"]):
        be = RtlBackend(sim="verilator", smem_bytes=RtlBackend.smem_bytes_for(part))
        by_rtl.update((id(o.record), o) for o in trace.run(part, be))
    by_rtl = [by_rtl[id(r)] for r in recs]
    bad = []
    for m, r in zip(by_model, by_rtl):
        mp, rp = m.produced, {k: v for k, v in r.produced.items() if k != "_at"}
        where = f"line {m.record.line} {m.record.form}"
        if ("error" in mp) != ("error" in rp):
            bad.append(f"{where}: model {mp.get('error', 'ran')!r}, RTL {rp.get('error', 'ran')!r}")
        elif "error" in mp and "the RTL refused the instruction: " in rp["error"]:
            code = rp["error"].split(": ")[1].split(" ")[0]
            want = _code(m.record.ins.op, mp["error"])
            if code != want:
                bad.append(f"{where}: model {mp['error']!r} ({want}), RTL {code}")
        elif "error" in mp and "the RTL refused" not in rp["error"] and mp["error"] != rp["error"] \
                and "outside" not in rp["error"]:
            bad.append(f"{where}: model {mp['error']!r}, RTL {rp['error']!r}")
        elif "error" not in mp:
            for k in ("regs", "smem", "tmem", "redval"):
                if k in mp and mp[k] != rp.get(k):
                    bad.append(f"{where}: {k} differs")
    assert not bad, "\n".join(bad[:20])
