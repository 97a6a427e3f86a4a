"""A small library of combinational building blocks: multiplexer trees, ROMs and their
multiplexers, a priority encoder. No import from the rest of the RTL."""
