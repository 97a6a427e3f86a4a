"""Shared memory: the bank stage (scheduler, crossbar, decompressor, store writes) and the
banks with their fill / dump port."""
