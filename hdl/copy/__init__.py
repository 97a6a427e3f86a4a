"""The copy wing: tcgen05.cp, shared memory into Tensor Memory (docs/tcgen05-cp.md)."""
