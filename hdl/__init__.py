"""tensorlsu.hdl: the Amaranth RTL of the load/store unit (generated from tensorlsu.sim.layouts)."""
