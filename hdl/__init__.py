"""tensorlsu.hdl: the Amaranth RTL of the load/store unit (generated from tensorlsu.sim.layouts).
It needs the ``rtl`` extra (Amaranth): ``pip install 'tensorlsu[rtl]'``."""

try:
    import amaranth  # noqa: F401
except ImportError as e:    # say which extra brings it, not only the missing module
    raise ImportError(f"tensorlsu.hdl needs Amaranth, in the rtl extra: pip install 'tensorlsu[rtl]' ({e})") from e

#: The unit's module name in emitted Verilog (here, so that the simulator-side testbench can
#: name it without importing the RTL).
TOP = "tensorlsu_lsu"
