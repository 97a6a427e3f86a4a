"""tensorlsu.cosim: the co-simulation harness (cocotb on Icarus or Verilator), the RTL backend
of trace replay, and the ``tensorlsu`` command line. Not RTL: it drives the emitted Verilog.

:mod:`.layout` has no RTL import and serves both sides: the host, which packs jobs, and the
cocotb module, which drives the ports."""
