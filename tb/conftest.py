import sys
from pathlib import Path

# Test helpers (ptxgen, stagesim, tmemgen, regress, ...) live in tb/, beside this file; the
# tests live in folders that mirror the RTL's wings (tb/pipeline, tb/smem, ...).
sys.path.insert(0, str(Path(__file__).parent))

#: The repository's root, the test data, and the hardware capture harness.
ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
HW = ROOT / "tb" / "hw"
