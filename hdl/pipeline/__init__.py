"""The instruction pipeline: the form tables, the boundary layouts, and the stages every
ldmatrix / stmatrix / wmma.load passes through whatever memory it reads (accept, pass queue,
take, ring, result entries and beats with the fragment shuffle)."""
