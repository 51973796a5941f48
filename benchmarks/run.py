"""Wall-time benchmarks, each printed side by side with a yardstick measured in the same run.

    python benchmarks/run.py [--repeat N]

Targets (issues 2 and 3): `--help`/`--version` under 3x `python3 -c pass`; diagnosing a scenario
bundle under 2x `python3 -c "import yaml, networkx, psutil"`; `collect` on a node without RDMA in
about a second. This machine is shared and noisy: medians of several runs, never a timed test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
DOCTOR = [sys.executable, "-m", "allreduce_doctor"]


def median_time(argv: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, env=ENV, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def row(label: str, seconds: float, yardstick: float, target: float | None) -> str:
    ratio = seconds / yardstick
    verdict = "" if target is None else ("  ok" if ratio < target else f"  OVER {target:g}x")
    return f"{label:<48} {seconds * 1000:8.1f} ms  {ratio:5.2f}x{verdict}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    n = ap.parse_args().repeat
    bare = median_time([sys.executable, "-c", "pass"], n)
    deps = median_time([sys.executable, "-c", "import yaml, networkx, psutil"], n)
    print(f"yardsticks: python3 -c pass = {bare * 1000:.1f} ms; "
          f"python3 -c 'import yaml, networkx, psutil' = {deps * 1000:.1f} ms  (median of {n})\n")
    print(f"{'command':<48} {'median':>11}  ratio")
    print(row("allreduce-doctor --help  (vs pass, < 3x)", median_time([*DOCTOR, "--help"], n), bare, 3))
    print(row("allreduce-doctor --version  (vs pass, < 3x)", median_time([*DOCTOR, "--version"], n), bare, 3))
    for bundle in sorted((ROOT / "tests" / "fixtures" / "scenarios").glob("*/bundle.tar.gz")):
        label = f"diagnose {bundle.parent.name}  (vs deps, < 2x)"
        print(row(label, median_time([*DOCTOR, "diagnose", "--snapshot", str(bundle)], n), deps, 2))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "node.tar.gz"
        collect = median_time([*DOCTOR, "collect", "-o", str(out), "--interval", "1"], max(3, n // 2))
        print(row("collect on this machine (--interval 1)", collect, deps, None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
