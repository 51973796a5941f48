"""Shared helpers for the evidence tests: load text as evidence, run the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from allreduce_doctor.evidence import load_evidence

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
CASES = DATA / "cases"
REAL = DATA / "real"
OUTPUTS = ROOT / "tests" / "fixtures" / "outputs"


def load_text(tmp_path: Path, text: str | bytes, name: str = "paste.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return load_evidence([str(path)])


def facts(tmp_path: Path, text: str | bytes, name: str = "paste.txt") -> dict:
    result = load_text(tmp_path, text, name)
    return {o.fact: o.value for o in result.observations}


def observations(tmp_path: Path, text: str | bytes) -> dict:
    return {o.fact: o for o in load_text(tmp_path, text).observations}


def fixture_body(path: Path) -> str:
    """A reference output without its 3 header lines (# source / # situation / # ---)."""
    lines = path.read_text().splitlines()
    body = lines[3:] if lines and lines[0].startswith("# source") else lines
    return "\n".join(body) + "\n"


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "allreduce_doctor", *args], capture_output=True, env=env,
                          cwd=ROOT, input=stdin, timeout=120)


def diagnose_json(tmp_path: Path, text: str, *extra: str) -> tuple[int, dict, str]:
    """(exit code, JSON Diagnosis, the paste's path) of `diagnose --evidence PASTE --format json`,
    run in process through the CLI's main."""
    import contextlib
    import io
    import json

    from allreduce_doctor.cli import main

    path = tmp_path / "paste.txt"
    path.write_text(text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["diagnose", "--evidence", str(path), "--format", "json", *extra])
    return rc, json.loads(out.getvalue()), str(path)


def diagnose_rc_json(tmp_path: Path, text: str) -> tuple[int, dict]:
    """(exit code, JSON Diagnosis) of `diagnose --evidence PASTE --format json`."""
    rc, d, _ = diagnose_json(tmp_path, text)
    return rc, d


def ranked(d: dict) -> list[str]:
    """The causes of a JSON Diagnosis's findings, best first."""
    return [f["cause"] for f in d["findings"]]


def step(d: dict, node: str) -> dict:
    """The walk's step `node` of a JSON Diagnosis."""
    return next(p for p in d["path"] if p["node"] == node)
