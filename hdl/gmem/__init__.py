"""Global memory: the AXI4 manager signature and the global fetch stage (requests, data,
landing) that serves a wmma.load pass in the bank stage's place."""
