"""Build the fleet's own scenario bundles under tests/fleet/data/ (run: python -m tests.fleet.build_data).

Variants of the shared node models (tests/scenarios): a RoCE node whose job pins a different
NCCL_IB_GID_INDEX than the rest of the fleet. Recorded like every scenario, through the real
probe catalogue and RecordingHost.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.scenarios import nodes as N
from tests.scenarios.build import record

DATA = Path(__file__).resolve().parent / "data"
BUNDLES: dict[str, N.Node] = {
    "roce-gid-index-5": N.Node("roce", env={"NCCL_IB_GID_INDEX": "5"}, hostname="gpu-node-021"),
}


def main(names: list[str]) -> int:
    DATA.mkdir(parents=True, exist_ok=True)
    for name in names or sorted(BUNDLES):
        out = DATA / f"{name}.tar.gz"
        record(BUNDLES[name], out)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
