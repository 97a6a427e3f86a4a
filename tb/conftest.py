import sys
from pathlib import Path

# Test helpers (ptxgen, …) live beside the tests.
sys.path.insert(0, str(Path(__file__).parent))

DATA = Path(__file__).parent / "data"
