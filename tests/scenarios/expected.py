"""What a scenario's expected.yaml pins, and the one command that (re)writes it.

    PYTHONPATH=src python -m tests.scenarios.expected [NAME ...]     (every scenario when none is named)

expected.yaml pins what the scenario is about: `verdict`, `cause`, `secondary` (the other causes
found) and `deciding`, the steps that decided the walk, each with its outcome; not the ~30 checks
that passed, so a new check that passes everywhere edits no fixture. A step decides when:
- its outcome is `unknown` (its evidence was missing: the verdict reports it), or
- its outcome leads somewhere else than `unknown` would (the walk left the way missing evidence
  takes: a failed check, the fabric branch, an answered question), or
- it is the last step (it reached the leaf).
The command diagnoses each bundle today and writes that; it is idempotent and reads both the
new form and the old one (`path:`, the whole walk). It refuses to write a file whose verdict,
cause, secondary causes or old `path` disagree with today's diagnosis: those are edited by hand.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"
ORDER = ("description", "verdict", "cause", "secondary", "deciding", "answers")


def load(name: str) -> dict:
    return yaml.safe_load((FIXTURES / name / "expected.yaml").read_text()) or {}


def diagnose(name: str, answers: dict | None = None, bundle: str | None = None) -> dict:
    """What `diagnose --snapshot tests/fixtures/scenarios/NAME/bundle.tar.gz` finds (bundle: the path it names)."""
    from allreduce_doctor.doctor import Doctor
    from allreduce_doctor.hosts.snapshot import SnapshotHost
    from allreduce_doctor.session import Options, Session

    host = SnapshotHost(FIXTURES / name / "bundle.tar.gz")
    return Session(Doctor.load(), host, Options(interval=0, answers=answers or {}, bundle=bundle)).diagnose().to_dict()


def cause_of(diagnosis: dict) -> str | None:
    return (diagnosis["root_cause"] or diagnosis["healthy"] or {}).get("id")


def secondary_of(diagnosis: dict) -> list[str]:
    cause = cause_of(diagnosis)
    return sorted(f["cause"] for f in diagnosis["findings"] if f["cause"] != cause)


def deciding_steps(diagnosis: dict, runbooks=None) -> dict[str, str]:
    """{node: outcome} of the steps that decided the walk, in path order (see the module doc)."""
    if runbooks is None:
        from allreduce_doctor.doctor import Doctor

        runbooks = Doctor.load().runbooks
    path = diagnosis["path"]
    steps = {}
    for i, step in enumerate(path):
        outcomes = runbooks.node(step["node"]).outcomes
        missing = outcomes.get("unknown")
        taken = outcomes[step["outcome"]]
        if step["outcome"] == "unknown" or missing is None or taken.target != missing.target or i == len(path) - 1:
            steps[step["node"]] = step["outcome"]
    return steps


def mismatches(expected: dict, diagnosis: dict, runbooks=None) -> list[str]:
    """One line per way today's diagnosis differs from what expected.yaml pins ([] when it agrees)."""
    if "path" in expected or "deciding" not in expected:
        return ["expected.yaml pins the whole path, not the deciding steps: run python -m tests.scenarios.expected NAME"]
    got = {"verdict": diagnosis["verdict"], "cause": cause_of(diagnosis), "secondary": secondary_of(diagnosis),
           "deciding": deciding_steps(diagnosis, runbooks)}
    want = {"verdict": expected["verdict"], "cause": expected["cause"],
            "secondary": sorted(expected.get("secondary") or []), "deciding": expected["deciding"]}
    return [f"{key}: expected {want[key]!r}, got {got[key]!r}" for key in got if got[key] != want[key]]


def rewrite(name: str, runbooks=None) -> str:
    """Write NAME's expected.yaml from today's diagnosis; returns what happened, in one line."""
    path = FIXTURES / name / "expected.yaml"
    expected = load(name)
    today = diagnose(name, expected.get("answers"))
    wrong = [f"{key}: expected {expected.get(key)!r}, got {value!r}"
             for key, value in (("verdict", today["verdict"]), ("cause", cause_of(today)), ("secondary", secondary_of(today)))
             if (sorted(expected.get(key) or []) if key == "secondary" else expected.get(key)) != value]
    if "path" in expected and expected["path"] != [s["node"] for s in today["path"]]:
        wrong.append("path: today's walk is not the one the file pins")
    if wrong:
        return f"{name}: NOT written, today's diagnosis differs ({'; '.join(wrong)}): fix the product or edit the file by hand"
    data = {**expected, "secondary": sorted(expected.get("secondary") or []), "deciding": deciding_steps(today, runbooks)}
    data.pop("path", None)
    ordered = {key: data[key] for key in ORDER if key in data} | {k: v for k, v in data.items() if k not in ORDER}
    text = yaml.safe_dump(ordered, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1000)
    if path.read_text() == text:
        return f"{name}: unchanged"
    path.write_text(text)
    return f"{name}: written ({len(data['deciding'])} deciding steps)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="scenario folders under tests/fixtures/scenarios (default: all)")
    args = parser.parse_args(argv)
    known = sorted(p.parent.name for p in FIXTURES.glob("*/expected.yaml"))
    unknown = [n for n in args.names if n not in known]
    if unknown:
        print(f"no scenario {', '.join(unknown)} under {FIXTURES}", file=sys.stderr)
        return 2
    from allreduce_doctor.doctor import Doctor

    runbooks = Doctor.load().runbooks
    lines = [rewrite(name, runbooks) for name in args.names or known]
    print("\n".join(lines))
    return 1 if any(": NOT written" in line for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main())
