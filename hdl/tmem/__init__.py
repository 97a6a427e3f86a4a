"""Tensor Memory: one lane quadrant and its tcgen05.ld / tcgen05.st datapath (check, steps,
banks, load, store, result beats), the step tables they are built from and their layouts."""
