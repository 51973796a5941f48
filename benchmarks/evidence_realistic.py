"""`diagnose --evidence` on logs shaped as real ones, side by side with `grep -c` on the same file.

    python benchmarks/evidence_realistic.py [--mb 100 300] [--repeat 3] [--shape realistic ...] [--keep DIR]
                                            [--src DIR]   # another checkout's src/, to compare (git archive)

Each log comes from benchmarks/nccl_log_gen.py (4,096 ranks, three communicators, per-rank pointers,
pids, tids, busIds and masks, srun interleaving by 64, NVLS/CollNet lines, a WARN on one rank, one
completion error 12 at 85%). Shapes: realistic (NCCL 2.21), v2.18, v2.23, warn-every-rank (every
rank of the failing step prints its own error), stamps (a log shipper's timestamp on every line),
flat (every rank prints rank 0's text: a log that repeats itself exactly).

For each shape and size, in the same run and on the same file, alternating: `grep -c NCCL FILE` and
`python -m allreduce_doctor diagnose --evidence FILE --format json`, each a child process whose CPU
time (user + sys) and peak RSS come from wait4(); the median of --repeat (modules byte-compiled
once before, as installed). It prints MB/s, the ratio
to grep, whether the buried error was found (its FILE:LINE in the output), and the cost split: the
fixed cost (the same command on the log's first 2,000 lines), the cost per MB past it, and the
distinct messages and shapes (evidence/shapes.py) of the log. Targets (issue 33): at most 5x grep's
CPU for every shape, RSS under 150 MB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from benchmarks.nccl_log_gen import write_log  # noqa: E402

SHAPES = {  # name -> write_log options
    "realistic": {"version": "2.21.5"},
    "v2.18": {"version": "2.18.6"},
    "v2.23": {"version": "2.23.4"},
    "warn-every-rank": {"version": "2.21.5", "warn_every": True},
    "stamps": {"version": "2.21.5", "stamps": True},
    "flat": {"version": "2.21.5", "flat": True},
}
# Byte-compiled once, as an installed package is (this image sets PYTHONDONTWRITEBYTECODE): the
# modules' compile time is not the scan's. The cache lives in a scratch folder, never in the tree.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(ROOT / "src")}


def child(argv: list[str], out: Path) -> tuple[float, int, int]:
    """(CPU seconds, peak RSS in KiB, exit status) of one child process, its stdout into `out`."""
    with out.open("wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL, env=ENV, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss, proc.returncode


def distinct(path: Path) -> tuple[int, int]:
    """(distinct NCCL messages, distinct shapes) the fast path's scan sees in the file."""
    from allreduce_doctor.evidence import bulk
    from allreduce_doctor.evidence.reader import BlockReader
    from allreduce_doctor.evidence.shapes import shapes

    messages: set[bytes] = set()
    forms: set[bytes] = set()
    with path.open("rb") as stream:
        for buf, start, end in BlockReader(stream, path.name):
            keys = [k for k in dict.fromkeys(bulk.rare(buf, start, end)) if k not in messages]
            messages.update(keys)
            forms.update(shapes(keys))
    return len(messages), len(forms)


def measure(path: Path, info: dict, repeat: int, tmp: Path) -> dict:
    grep, ours, rss = [], [], []
    out = tmp / "out.json"
    small = tmp / "head.log"
    with path.open("rb") as src, small.open("wb") as dst:
        dst.writelines(line for _, line in zip(range(2000), src))
    head = [sys.executable, "-m", "allreduce_doctor", "diagnose", "--evidence", str(small), "--format", "json"]
    child(head, tmp / "head.json")  # byte-compiles the modules, once
    for _ in range(repeat):
        grep.append(child(["grep", "-c", "NCCL", str(path)], tmp / "grep.txt")[0])
        seconds, peak, code = child([sys.executable, "-m", "allreduce_doctor", "diagnose", "--evidence", str(path),
                                     "--format", "json"], out)
        ours.append(seconds)
        rss.append(peak)
    text = out.read_text(errors="replace")
    fixed = statistics.median(child(head, tmp / "head.json")[0] for _ in range(repeat))
    return {"grep": statistics.median(grep), "ours": statistics.median(ours), "rss": max(rss), "code": code,
            "found": f"{path}:{info['error_line']}" in text, "fixed": fixed}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, nargs="+", default=[100, 300])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shape", nargs="+", choices=sorted(SHAPES), default=list(SHAPES))
    ap.add_argument("--keep", help="write the logs into this directory and keep them")
    ap.add_argument("--src", help="the src/ directory whose allreduce_doctor is measured (default: this one)")
    args = ap.parse_args()
    if args.src:
        ENV["PYTHONPATH"] = str(Path(args.src).resolve())
    print(f"{'shape':16} {'MB':>5} {'grep s':>7} {'ours s':>7} {'MB/s':>6} {'ratio':>6} {'RSS MB':>6} {'error':>6} "
          f"{'fixed s':>7} {'s/100MB':>7} {'messages':>9} {'shapes':>6}")
    worst = 0.0
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        ENV["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
        folder = Path(args.keep) if args.keep else tmp
        for mb in args.mb:
            for shape in args.shape:
                path = folder / f"nccl-{shape}-{mb:g}mb.log"
                info = write_log(path, mb, **SHAPES[shape])
                size = info["bytes"] / 1e6
                r = measure(path, info, args.repeat, tmp)
                messages, forms = distinct(path)
                ratio = r["ours"] / r["grep"]
                worst = max(worst, ratio)
                per = (r["ours"] - r["fixed"]) / size * 100
                print(f"{shape:16} {size:5.0f} {r['grep']:7.3f} {r['ours']:7.3f} {size / r['ours']:6.0f} {ratio:5.1f}x "
                      f"{r['rss'] / 1024:6.0f} {'found' if r['found'] else 'MISSED':>6} {r['fixed']:7.3f} {per:7.3f} "
                      f"{messages:9d} {forms:6d}", flush=True)
                if not args.keep:
                    path.unlink()
    print(f"worst ratio to grep: {worst:.1f}x (target <= 5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
