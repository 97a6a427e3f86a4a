"""tensorlsu.data: the traces shipped with the package, in the project's trace format
(docs/trace-format.md).

- ``h200_sm90``: 822 ldmatrix / stmatrix / wmma.load vectors captured on an NVIDIA H200 (sm_90a).
- ``h200_capture``: 1,248 records the project's capture harness (tb/hw) took on the H200:
  ldmatrix, stmatrix and wmma.load.
- ``h200_wmma_cost``: wmma.load's measured bank cost on the H200, per form, stride and offset.
- ``sm100_tmem``: tcgen05.ld / tcgen05.st records for the sm_100 family (expectations from the model).
- ``sm100_cp``: tcgen05.cp records, with decompression (expectations from the model).

``tensorlsu replay NAME`` takes these names in place of a path.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["NAMES", "path"]

#: the bundled traces, by name
NAMES = ("h200_sm90", "h200_capture", "h200_wmma_cost", "sm100_tmem", "sm100_cp")


def path(name: str) -> Path:
    """The file of the bundled trace ``name`` (one of :data:`NAMES`)."""
    if name not in NAMES:
        raise ValueError(f"no bundled trace {name!r}; there are: {', '.join(NAMES)}")
    return Path(str(resources.files(__name__) / f"{name}.jsonl"))
