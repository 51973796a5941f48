"""Fleet benchmark: compare N synthetic node bundles, beside the time to read the same bytes.

    python -m tests.fleet.benchmark [--nodes 4096] [--jobs N]

The fleet is the realistic scenario bundles copied under node names (one node with PFC off, one
with another NCCL_IB_GID_INDEX, one with ECN off, the rest healthy). Yardsticks, measured in the
same run: reading every bundle's bytes (`cat`), and `tar -xzOf` of every bundle (one tar per
bundle: every member decompressed and read, written nowhere; unpacking to disk measures the
filesystem's file creation instead). Reported: wall time and the peak RSS of the fleet process tree (wait4).
Target (issue 8): under 3x the tar yardstick and under 2 GB RSS.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.fleet.conftest import ENV, GID5, ROOT, bundle

VARIANTS = {0: "roce-pfc-off", 1: GID5, 2: "roce-ecn-off"}


def make_fleet(folder: Path, nodes: int) -> None:
    for i in range(nodes):
        shutil.copyfile(bundle(VARIANTS.get(i, "roce-healthy")), folder / f"gpu{i + 1:04d}.tar.gz")


def timed(argv: list[str], **kwargs) -> tuple[float, int]:
    """(wall seconds, peak RSS in KiB of the process and its waited-for children)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, **kwargs)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_maxrss


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=4096)
    ap.add_argument("--jobs", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fleet, report = Path(tmp) / "fleet", Path(tmp) / "report.json"
        fleet.mkdir()
        make_fleet(fleet, args.nodes)
        files = sorted(fleet.iterdir())
        size = sum(f.stat().st_size for f in files)
        start = time.perf_counter()
        for f in files:
            f.read_bytes()
        cat = time.perf_counter() - start
        start = time.perf_counter()
        for f in files:
            subprocess.run(["tar", "-xzOf", str(f)], check=True, stdout=subprocess.DEVNULL)
        tar = time.perf_counter() - start
        argv = [sys.executable, "-m", "allreduce_doctor", "fleet", "--snapshots", str(fleet), "--format", "json",
                "--output", str(report)] + (["--jobs", str(args.jobs)] if args.jobs else [])
        wall, rss = timed(argv, env=ENV, cwd=ROOT)
        checked = report.read_text().count('"verdict"') if report.exists() else 0
    print(f"{args.nodes} bundles, {size / 2**20:.1f} MiB, {os.cpu_count()} CPUs")
    print(f"yardstick cat (read every bundle):        {cat:8.2f} s")
    print(f"yardstick tar -xzOf (read every member):   {tar:8.2f} s")
    print(f"fleet --snapshots:                         {wall:8.2f} s  {wall / tar:5.2f}x tar  "
          f"{'ok' if wall < 3 * tar else 'OVER 3x'}")
    print(f"peak RSS (largest process):                {rss / 1024:8.0f} MiB  {'ok' if rss < 2 * 1024 * 1024 else 'OVER 2 GB'}")
    print(f"report verdict entries: {checked}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
