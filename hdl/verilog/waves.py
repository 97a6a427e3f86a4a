"""Waveforms a person can read: the unit's stream payloads as named fields, and a GTKWave save
file that lays them out per port with form ids, error codes and the other coded fields decoded.

At the unit's boundary every stream payload is one flat vector (the result alone is over a
thousand bits). :func:`named_verilog` wraps the unit in a module of the same name and the same
ports that only declares one wire per payload field, named after the port and the field path
(``result__payload__error``, ``instr__payload__addr__5``, ``tmem_result__0__payload__data__1__7``);
a plain field wider than 64 bits is split into 32-bit words (``fill__payload__data__3``). The
unit keeps its Verilog, under the name ``<top>_unit``; the wrapper adds no logic and no clock
of latency, so a testbench or a user's design instantiates it exactly as it would the unit, and
every waveform dump then holds the fields.

:func:`gtkw_text` writes the save file for a dump of that wrapper, and :func:`filter_files` the
translate filter files it names: the form ids of ``instr``, the Tensor Memory shape codes, the
tcgen05.cp forms and source formats, and every enum field (errors, state spaces, reduction
types, result kinds) by name. One source of truth: the fields come from the port signatures'
layouts, the names from the same tables the Verilog header (:mod:`.header`) is written from.
"""

from __future__ import annotations

import enum
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from amaranth import Shape
from amaranth.lib import data, wiring
from vcd.gtkw import GTKWSave, make_translation_filter

from tensorlsu.sim.tmem_plan import SHAPES

from ..codes import FORMAT_CODES
from ..copy.records import FORMS as CP_FORMS
from ..pipeline import forms

__all__ = ["Field", "payload_fields", "named_verilog", "gtkw_text", "filter_files", "write_waves_files", "UNIT_SUFFIX"]

#: The unit's module name inside the wrapper: ``<top>_unit``.
UNIT_SUFFIX = "_unit"
#: A plain field wider than this is dumped as 32-bit words (viewers and Verilator's tracing
#: handle narrow signals best; a word is what a register holds).
_WIDEST = 64
_WORD = 32


def _form_names() -> dict[int, str]:
    # the state space is a field of its own (a wmma.load form serves every space)
    return {fid: ".".join(w for w in f.form.split(".") if w not in ("sync", "aligned", "shared"))
            for fid, f in enumerate(forms.FORMS)}


def _cp_form_names() -> dict[int, str]:
    return {k: f"tcgen05.cp.{shape}" + (f".{cast}" if cast else "") for k, (shape, cast) in enumerate(CP_FORMS)}


#: Coded fields that are plain numbers in the layouts, by (port, field): value -> name.
_CODES = {
    ("instr", "form"): _form_names,
    ("tmem_instr", "shape_id"): lambda: dict(enumerate(SHAPES)),
    ("cp_instr", "form"): _cp_form_names,
    ("cp_instr", "fmt"): lambda: {code: name or "none" for name, code in FORMAT_CODES.items()},
}


@dataclass(frozen=True)
class Field:
    """One named field of a port's payload: the wire ``name`` is ``payload[offset +: width]``."""

    port: str                     # the port's signal stem, e.g. "tmem_result__2"
    path: tuple[str, ...]         # the field path inside the payload, e.g. ("data", "1", "7")
    offset: int
    width: int
    signed: bool = False
    #: value -> name for a coded field (None: a number)
    names: dict[int, str] | None = field(default=None, compare=False)
    #: which table ``names`` is, for the filter file's name ("error", "instr_form", ...)
    table: str | None = None

    @property
    def payload(self) -> str:
        return f"{self.port}__payload"

    @property
    def name(self) -> str:
        """The wire's name (a narrow plain payload: the port's own)."""
        return "__".join((self.payload, *self.path))


def _leaves(shape, path=(), offset=0):
    """(path, offset, width, signed, enum class or None) of every leaf of a payload layout."""
    if isinstance(shape, data.StructLayout):
        for name, f in shape:
            yield from _leaves(f.shape, (*path, name), offset + f.offset)
    elif isinstance(shape, data.ArrayLayout):
        step = Shape.cast(shape.elem_shape).width
        for k in range(shape.length):
            yield from _leaves(shape.elem_shape, (*path, str(k)), offset + k * step)
    else:
        cast = Shape.cast(shape)
        is_enum = isinstance(shape, type) and issubclass(shape, enum.Enum)
        if cast.width > _WIDEST and not is_enum:
            for k in range(cast.width // _WORD):
                yield (*path, str(k)), offset + k * _WORD, _WORD, False, None
        else:
            yield path, offset, cast.width, cast.signed, shape if is_enum else None


def _streams(dut):
    """(port stem, kind, payload shape) of every stream port: kind is the member name without
    the quadrant index (``tmem_result`` for ``tmem_result__2``)."""
    for name, member in dut.signature.members.items():
        if member.is_port or "payload" not in member.signature.members:
            continue                      # smem_size, and the AXI port (AXI names already)
        shape = member.signature.members["payload"].shape
        if member.dimensions:
            for q in range(member.dimensions[0]):
                yield f"{name}__{q}", name, shape
        else:
            yield name, name, shape


def payload_fields(dut) -> list[Field]:
    """Every named field of every stream payload of ``dut`` (a LoadStoreUnit), port by port."""
    out = []
    for port, kind, shape in _streams(dut):
        if not isinstance(shape, data.Layout):
            # a plain payload (dump_req's line, dump's bytes): words if wide, else itself
            shape = data.StructLayout({"value": shape}) if Shape.cast(shape).width <= _WIDEST \
                else data.ArrayLayout(_WORD, Shape.cast(shape).width // _WORD)
        for path, offset, width, signed, enum_cls in _leaves(shape):
            path = tuple(p for p in path if p != "value")
            names, table = None, None
            if enum_cls is not None:
                names, table = {int(e.value): e.name.lower() for e in enum_cls}, enum_cls.__name__.lower()
            elif (kind, path[0] if path else "") in _CODES:
                names, table = _CODES[kind, path[0]](), f"{kind}_{path[0]}"
            out.append(Field(port, path, offset, width, signed, names, table))
    return out


def _port_decls(dut) -> list[tuple[str, str, int]]:
    """(direction, name, width) of every port of the unit, clock and reset first."""
    out = [("input", "clk", 1), ("input", "rst", 1)]
    for path, member, _ in dut.signature.flatten(dut):
        out.append(("input" if member.flow == wiring.In else "output", "__".join(map(str, path)),
                    Shape.cast(member.shape).width))
    return out


def named_verilog(dut, text: str, top: str) -> str:
    """``text`` (the unit's Verilog, top module ``top``) with the unit renamed ``<top>_unit`` and
    a wrapper module ``top`` of the same ports that declares a wire per payload field."""
    inner = top + UNIT_SUFFIX
    renamed, n = re.subn(rf"^module {re.escape(top)}\(", f"module {inner}(", text, flags=re.M)
    if n != 1:
        raise ValueError(f"no module {top} in the Verilog")
    ports = _port_decls(dut)
    out = ["", f"// {top}: the unit ({inner}) with each stream payload's fields as named wires, for",
           "// waveforms (tensorlsu.hdl.verilog.waves); no logic of its own.",
           f"module {top}(" + ", ".join(name for _, name, _ in ports) + ");"]
    out += [f"  {d} wire {f'[{w - 1}:0] ' if w > 1 else ''}{name};" for d, name, w in ports]
    out.append(f"  {inner} unit (" + ", ".join(f".{name}({name})" for _, name, _ in ports) + ");")
    for f in payload_fields(dut):
        if not f.path:
            continue                      # a narrow plain payload is its own name
        rng = f"[{f.width - 1}:0] " if f.width > 1 else ""
        sel = f"[{f.offset + f.width - 1}:{f.offset}]" if f.width > 1 else f"[{f.offset}]"
        out.append(f"  wire {'signed ' if f.signed else ''}{rng}{f.name} = {f.payload}{sel};")
    out += ["endmodule", ""]
    return renamed + "\n".join(out)


def filter_files(dut) -> dict[str, str]:
    """GTKWave translate filter files by file name: for each coded field's table, its values (as
    GTKWave prints them in decimal) and names."""
    out = {}
    for f in payload_fields(dut):
        if f.names is not None and f.table is not None:
            out[f"{f.table}.txt"] = make_translation_filter(sorted(f.names.items()), datafmt="dec")
    return out


def gtkw_text(dut, dump: str | Path | None, scope: str, filters: str | Path = "filters") -> str:
    """A GTKWave save file for ``dump`` (None: the dump given to gtkwave with it, ``gtkwave
    DUMP SAVE``), a waveform of the wrapper at hierarchy ``scope`` (e.g.
    ``tensorlsu_lsu`` for Icarus, ``TOP.tensorlsu_lsu`` for Verilator): clock and reset, then a
    group per stream port with valid, ready and the named fields (coded ones through the filter
    files in the folder ``filters``, relative to the save file or absolute); the AXI port's
    handshakes when the unit has one. Groups of the wide data fields start closed."""
    buf = io.StringIO()
    save = GTKWSave(buf)
    save.comment(f"the {scope} ports, payload fields named (tensorlsu.hdl.verilog.waves)")
    if dump is not None:
        save.dumpfile(str(dump))
    save.sst_expanded(True)
    save.signals_width(320)
    save.trace(f"{scope}.clk", datafmt="bin")
    save.trace(f"{scope}.rst", datafmt="bin")
    by_port: dict[str, list[Field]] = {}
    for f in payload_fields(dut):
        by_port.setdefault(f.port, []).append(f)
    for port, fields in by_port.items():
        with save.group(port, closed=port.startswith(("fill", "dump", "store", "tmem_fill", "tmem_store", "tmem_dump"))):
            save.trace(f"{scope}.{port}__valid", datafmt="bin")
            save.trace(f"{scope}.{port}__ready", datafmt="bin")
            arrays: dict[str, list[Field]] = {}
            for f in fields:
                if len(f.path) > 1:           # an array's element: in a closed group of its own
                    arrays.setdefault(f.path[0], []).append(f)
                    continue
                _trace(save, scope, f, filters)
            for name, elems in arrays.items():
                with save.group(f"{port}.{name}", closed=True):
                    for f in elems:
                        _trace(save, scope, f, filters)
    if any(path[0] == "axi" for path, _, _ in dut.signature.flatten(dut)):
        with save.group("axi", closed=True):
            for path, member, _ in dut.signature.flatten(dut):
                width = Shape.cast(member.shape).width
                if path[0] == "axi" and width <= _WIDEST:
                    save.trace(_signal(scope, "__".join(map(str, path)), width),
                               datafmt="bin" if width == 1 else "hex")
    return buf.getvalue()


def _signal(scope: str, name: str, width: int) -> str:
    """A signal as GTKWave names it: a vector with its bit range."""
    return f"{scope}.{name}" + (f"[{width - 1}:0]" if width > 1 else "")


def _trace(save: GTKWSave, scope: str, f: Field, filters) -> None:
    alias, name = ".".join((f.port, *f.path)), _signal(scope, f.name, f.width)
    if f.names is not None:
        save.trace(name, alias=alias, datafmt="dec", translate_filter_file=str(Path(filters) / f"{f.table}.txt"))
    elif f.width == 1:
        save.trace(name, alias=alias, datafmt="bin")
    else:
        save.trace(name, alias=alias, datafmt="signed" if f.signed else "hex")


def write_waves_files(dut, folder: Path, dump: str | Path | None, scope: str, name: str) -> Path:
    """Write ``name``.gtkw and its filter files (in ``folder``/filters) for ``dump``
    (:func:`gtkw_text`); returns the save file's path."""
    folder = Path(folder).resolve()
    (folder / "filters").mkdir(parents=True, exist_ok=True)
    for fname, text in filter_files(dut).items():
        (folder / "filters" / fname).write_text(text)
    save = folder / f"{name}.gtkw"
    save.write_text(gtkw_text(dut, dump, scope, folder / "filters"))
    return save
