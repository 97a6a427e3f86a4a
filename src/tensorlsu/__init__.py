"""tensorlsu: an RTL model of the GPU warp-level matrix load/store unit (ldmatrix, stmatrix,
wmma.load, tcgen05.ld / tcgen05.st / tcgen05.cp) with a bit-exact numpy reference.

Subpackages: :mod:`tensorlsu.sim` (PTX front end, layouts, the reference model, traces; numpy
only), :mod:`tensorlsu.hdl` (the Amaranth RTL; the ``rtl`` extra), :mod:`tensorlsu.cosim` (the
co-simulation harness and the ``tensorlsu`` command; the ``sim`` extra) and :mod:`tensorlsu.data`
(the hardware vectors the quick start replays).
"""

#: the package's version, the one source of it (pyproject.toml reads it from here)
__version__ = "0.2.0"
