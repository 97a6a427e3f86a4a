"""tensorlsu.hdl: the Amaranth RTL of the load/store unit (generated from tensorlsu.sim.layouts)."""

#: The unit's module name in emitted Verilog (here, so that the simulator-side testbench can
#: name it without importing the RTL).
TOP = "tensorlsu_lsu"
