"""Score `diagnose --evidence` on the field corpus: top-1 and top-3 per half, per cause family.

    python benchmarks/real_cases.py [--half dev|held_out|both] [--batch N] [--misses] [--json]

The corpus is tests/evidence/cases/index.yaml (real reports, each with the cause its thread
established, split once into dev and held_out by a fixed rule). Each paste goes through the same
library path as `diagnose --evidence FILE` (Doctor, EmptyHost, Session). Top-1 is the root cause
(or the healthy end); top-3 are the first three distinct causes of the ordered findings. A paste
that is read and names no cause ("No fault in the pasted text") answers no_fault_found; a paste
that is refused (no signal) counts as a miss and is listed. Tune on dev only.

A case's `batch` (1 when absent) says when it was gathered. Once a half has been scored, its
cases have been seen; a later batch's held-out cases are a fresh held-out set, so each half's
figures are also printed per batch.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "evidence" / "cases"
sys.path.insert(0, str(ROOT / "src"))


def load_corpus() -> list[dict]:
    import yaml

    return yaml.safe_load((CORPUS / "index.yaml").read_text())["cases"]


def diagnose_case(doctor, case: dict) -> dict:
    """{top: [cause ids, best first], refused: message or None} for one corpus case."""
    from allreduce_doctor.errors import DoctorError
    from allreduce_doctor.evidence import load_evidence
    from allreduce_doctor.hosts.empty import EmptyHost
    from allreduce_doctor.session import Options, Session

    path = CORPUS / case["file"]
    try:
        result = load_evidence([str(path)], case.get("symptom"))
    except DoctorError as exc:
        return {"top": [], "refused": str(exc)}
    options = Options(evidence=result.observations, evidence_report=result.report, interval=0)
    options.symptom = case.get("symptom")
    data = Session(doctor, EmptyHost(), options).diagnose().to_dict()
    first = (data.get("root_cause") or {}).get("id") or (data.get("healthy") or {}).get("id")
    ranked = [first] if first else []
    for finding in data.get("findings") or []:
        if finding["cause"] not in ranked:
            ranked.append(finding["cause"])
    # A read paste with no candidate ends "No fault in the pasted text" (never healthy): that is the
    # tool's no-fault answer, which a thread that found no fault established.
    return {"top": ranked or ["no_fault_found"], "refused": None, "verdict": data.get("verdict")}


def batch_of(case: dict) -> int:
    return int(case.get("batch", 1))


def score(cases: list[dict], results: dict[str, dict], section_of) -> dict:
    by_family: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    total = [0, 0, 0]
    for case in cases:
        top = results[case["id"]]["top"]
        hit1, hit3 = int(top[:1] == [case["cause"]]), int(case["cause"] in top[:3])
        for row in (by_family[section_of(case["cause"])], total):
            row[0] += 1
            row[1] += hit1
            row[2] += hit3
    return {"total": total, "families": dict(sorted(by_family.items()))}


def _pct(hit: int, n: int) -> str:
    return f"{hit}/{n} ({100 * hit / n:.0f}%)" if n else "-"


def main(argv: list[str] | None = None) -> int:
    from allreduce_doctor.doctor import Doctor

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=("dev", "held_out", "both"), default="both")
    parser.add_argument("--batch", type=int, help="only the cases gathered in this batch")
    parser.add_argument("--misses", action="store_true", help="list each top-1 miss with what came out")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    doctor = Doctor.load()

    from allreduce_doctor.runbook.causes import load_catalogue

    causes = load_catalogue()

    def section_of(cause: str) -> str:
        return causes[cause].section if cause in causes else "(not in the catalogue)"

    corpus = [c for c in load_corpus() if args.batch is None or batch_of(c) == args.batch]
    halves = ("dev", "held_out") if args.half == "both" else (args.half,)
    report = {}
    for half in halves:
        cases = [c for c in corpus if c["half"] == half]
        results = {c["id"]: diagnose_case(doctor, c) for c in cases}
        report[half] = score(cases, results, section_of)
        report[half]["batches"] = {
            batch: score([c for c in cases if batch_of(c) == batch], results, section_of)["total"]
            for batch in sorted({batch_of(c) for c in cases})}
        report[half]["misses"] = [
            {"id": c["id"], "cause": c["cause"], "got": results[c["id"]]["top"][:3],
             "refused": results[c["id"]]["refused"]}
            for c in cases if results[c["id"]]["top"][:1] != [c["cause"]]]
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for half in halves:
        n, t1, t3 = report[half]["total"]
        print(f"{half}: {n} cases  top-1 {_pct(t1, n)}  top-3 {_pct(t3, n)}")
        batches = report[half]["batches"]
        for batch, (bn, b1, b3) in batches.items() if len(batches) > 1 else ():
            print(f"  batch {batch:<22} top-1 {_pct(b1, bn):<12} top-3 {_pct(b3, bn)}")
        for family, (fn, f1, f3) in report[half]["families"].items():
            print(f"  {family:<28} top-1 {_pct(f1, fn):<12} top-3 {_pct(f3, fn)}")
        if args.misses:
            for miss in report[half]["misses"]:
                why = f"refused: {miss['refused']}" if miss["refused"] else f"got {miss['got']}"
                print(f"  miss {miss['id']:<32} want {miss['cause']:<28} {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
