"""Fleet benchmark: `fleet --snapshots` over N node bundles beside `tar -xzOf` of the same bundles.

    python benchmarks/fleet_snapshots.py [--nodes 16,256,1024,4096] [--jobs N] [--repeat 3]

The implementation lives with the fleet tests (tests/fleet/benchmark.py), which build the fleet
from the scenario bundles; this is the entry point beside the other benchmarks.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tests.fleet.benchmark import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
