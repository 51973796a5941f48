"""Prove a fleet change keeps the output: record every fleet's JSON and per-node diagnoses, then diff.

    python benchmarks/fleet_compare.py record DIR [--nodes 256]   # with the code before the change
    python benchmarks/fleet_compare.py record DIR2                # with the code after it
    python benchmarks/fleet_compare.py diff DIR DIR2              # exit 1 and the first differences

Fleets: every fleet of tests/fleet/scenarios.yaml, and one of N nodes cycling through every scenario
bundle (IB and RoCE, every fault) plus a damaged bundle, each run with --jobs 1 (inline) and with
--jobs CORES (the pool, where the fleet is big enough to fork), with --per-node and without it
(the report alone: a worker need not build each node's whole diagnosis then). What is recorded is
`fleet --snapshots --format json` and `--per-node DIR` as the CLI writes them, with the only
fields that change from run to run (the time of the diagnosis) blanked.
To record the code before a change without touching the checkout:
`git archive HEAD src | tar -x -C /tmp/before` and run with PYTHONPATH=/tmp/before/src.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "tests" / "fixtures" / "scenarios"
FLEET_TESTS = ROOT / "tests" / "fleet"
VOLATILE = ("diagnosed_at",)  # the clock at the run: the one field two identical runs differ in


def fleets(nodes: int) -> dict[str, dict[str, Path | bytes]]:
    """{fleet name: {node: bundle path, or raw bytes for a damaged one}}."""
    out: dict[str, dict[str, Path | bytes]] = {}
    for case in yaml.safe_load((FLEET_TESTS / "scenarios.yaml").read_text()):
        out[case["name"]] = {node: FLEET_TESTS / b if b.endswith(".tar.gz") else SCENARIOS / b / "bundle.tar.gz"
                             for node, b in case["nodes"].items()}
    every = sorted(SCENARIOS.glob("*/bundle.tar.gz")) + [FLEET_TESTS / "data" / "roce-gid-index-5.tar.gz"]
    mixed: dict[str, Path | bytes] = {f"n{i:04d}": every[i % len(every)] for i in range(nodes - 1)}
    mixed[f"n{nodes - 1:04d}"] = every[0].read_bytes()[:5000]  # cut short: a bundle the pool reports by name
    out[f"every-scenario-{nodes}"] = mixed
    return out


def blank(value):
    if isinstance(value, dict):
        return {k: "" if k in VOLATILE else blank(v) for k, v in value.items()}
    if isinstance(value, list):
        return [blank(v) for v in value]
    return value


def record(out: Path, nodes: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH") or str(ROOT / "src")}
    for name, layout in fleets(nodes).items():
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "fleet"
            folder.mkdir()
            for node, source in layout.items():
                target = folder / f"{node}.tar.gz"
                target.write_bytes(source) if isinstance(source, bytes) else shutil.copyfile(source, target)
            cores = str(max(2, os.cpu_count() or 2))
            for tag, jobs, per_node in (("inline", "1", True), ("pool", cores, True), ("pool-report-only", cores, False)):
                nodes_dir = Path(tmp) / f"nodes-{tag}"
                argv = [sys.executable, "-m", "allreduce_doctor", "fleet", "--snapshots", str(folder), "--format",
                        "json", "--jobs", jobs] + (["--per-node", str(nodes_dir)] if per_node else [])
                proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp, timeout=1800)
                def read(text: str):  # the temporary folder's name differs from run to run
                    return blank(json.loads(text.replace(json.dumps(str(folder))[1:-1], "FLEET")))

                result = {"exit": proc.returncode, "stderr": proc.stderr.replace(str(folder), "FLEET"),
                          "fleet": read(proc.stdout),
                          "per_node": {p.stem: read(p.read_text()) for p in sorted(nodes_dir.glob("*.json"))}}
                (out / f"{name}.{tag}.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
                print(f"{name} ({tag}): exit {proc.returncode}, {len(result['per_node'])} per-node diagnoses", flush=True)


def diff(before: Path, after: Path) -> int:
    names = sorted({p.name for p in before.glob("*.json")} | {p.name for p in after.glob("*.json")})
    bad = 0
    for name in names:
        a, b = before / name, after / name
        if not (a.exists() and b.exists()):
            print(f"{name}: only in {before if a.exists() else after}")
            bad += 1
        elif a.read_bytes() != b.read_bytes():
            bad += 1
            print(f"{name} differs:")
            for where, old, new in list(differences(json.loads(a.read_text()), json.loads(b.read_text())))[:10]:
                print(f"  {where}: {json.dumps(old)[:150]} -> {json.dumps(new)[:150]}")
    print(f"{len(names) - bad} of {len(names)} recordings identical")
    return 1 if bad else 0


def differences(old, new, where: str = ""):
    """(path, old, new) of each leaf that differs, depth first."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            yield from differences(old.get(key, "<absent>"), new.get(key, "<absent>"), f"{where}.{key}")
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (o, n) in enumerate(zip(old, new)):
            yield from differences(o, n, f"{where}[{i}]")
    elif old != new:
        yield where or ".", old, new


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("dir", type=Path)
    rec.add_argument("--nodes", type=int, default=256)
    cmp = sub.add_parser("diff")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    args = ap.parse_args()
    if args.command == "record":
        record(args.dir, args.nodes)
        return 0
    return diff(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
