"""Fleet benchmark: compare N synthetic node bundles, beside the time to read the same bytes.

    python -m tests.fleet.benchmark [--nodes 16,256,1024,4096] [--jobs N]

The fleet is the realistic scenario bundles copied under node names (one node with PFC off, one
with another NCCL_IB_GID_INDEX, one with ECN off, the rest healthy). Per size, the yardstick
`tar -xzOf` of every bundle (one tar per bundle: every member decompressed and read, written
nowhere; unpacking to disk measures the filesystem's file creation instead) and the fleet run
alternately, A B A B; reported: medians of wall time and of CPU time (user + system of the process
tree, wait4), the fleet's CPU per bundle, and the peak RSS of its largest process. The last line
is the series: how the cost per bundle grows with the fleet. Target (issue 16): <= 1.5x the tar
yardstick's wall time, using every core.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
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


def timed(argv: list[str], **kwargs) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in KiB) of the process and its waited-for children."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, **kwargs)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def measure(nodes: int, jobs: int, repeat: int, tmp: Path) -> dict:
    fleet, report = tmp / f"fleet-{nodes}", tmp / "report.json"
    fleet.mkdir()
    make_fleet(fleet, nodes)
    tar = ["sh", "-c", 'for f in "$0"/*.tar.gz; do tar -xzOf "$f"; done >/dev/null', str(fleet)]
    ours = [sys.executable, "-m", "allreduce_doctor", "fleet", "--snapshots", str(fleet), "--format", "json",
            "--output", str(report)] + (["--jobs", str(jobs)] if jobs else [])
    runs: dict[str, list] = {"tar": [], "fleet": []}
    for _ in range(repeat):
        runs["tar"].append(timed(tar))
        runs["fleet"].append(timed(ours, env=ENV, cwd=ROOT, stdout=subprocess.DEVNULL))
    checked = report.read_text().count('"verdict"') if report.exists() else 0
    shutil.rmtree(fleet)
    med = {side: (statistics.median(r[0] for r in got), statistics.median(r[1] for r in got), max(r[2] for r in got))
           for side, got in runs.items()}
    return {"nodes": nodes, "tar": med["tar"], "fleet": med["fleet"], "verdicts": checked}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", default="16,256,1024,4096", help="fleet sizes, comma-separated")
    ap.add_argument("--jobs", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="A B runs per size up to 256 bundles (one above)")
    args = ap.parse_args()
    print(f"{os.cpu_count()} CPUs; medians of wall and CPU (process tree)", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for nodes in [int(n) for n in args.nodes.split(",") if n]:
            row = measure(nodes, args.jobs, args.repeat if nodes <= 256 else 1, Path(tmp))
            (fw, fc, rss), (tw, tc, _) = row["fleet"], row["tar"]
            print(f"{nodes:5d} bundles: fleet {fw:7.2f} s wall {fc:7.2f} s CPU ({fc / nodes * 1000:5.1f} ms/bundle), "
                  f"tar -xzOf {tw:6.2f} s wall {tc:6.2f} s CPU: {fw / tw:4.2f}x wall {'ok' if fw <= 1.5 * tw else 'OVER 1.5x'}, "
                  f"peak RSS {rss / 1024:.0f} MiB, {row['verdicts']} verdicts", flush=True)
            rows.append(row)
    print("series (fleet CPU per bundle): " + "; ".join(f"{r['nodes']}: {r['fleet'][1] / r['nodes'] * 1000:.1f} ms"
                                                       for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
