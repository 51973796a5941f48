"""Every user-visible output in one file, to prove a speed change left them byte-identical.

    python benchmarks/output_digest.py OUT.txt        # then: diff before.txt after.txt

Runs the CLI in-process (cli.main) on: the top-level and each command's --help at 60, 100 and
200 columns; every scenario bundle as JSON and text; every pasted case (tests/evidence/cases,
tests/evidence/data/cases) as JSON and text. Writes each output with its exit code under a
header naming the command line; the one volatile field, the JSON's "diagnosed_at", is masked.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from allreduce_doctor.cli import COMMANDS, main  # noqa: E402

DIAGNOSED_AT = re.compile(r'"diagnosed_at": "[^"]*"')


def _run(argv: list[str], columns: int | None = None) -> str:
    out, err = io.StringIO(), io.StringIO()
    saved = os.environ.get("COLUMNS")
    if columns is not None:
        os.environ["COLUMNS"] = str(columns)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as stop:
                code = stop.code
    finally:
        if saved is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = saved
    text = DIAGNOSED_AT.sub('"diagnosed_at": "(masked)"', out.getvalue())
    return f"=== {' '.join(argv)} (columns {columns}) -> {code}\n{text}--- stderr\n{err.getvalue()}"


def outputs() -> list[str]:
    texts = []
    for columns in (60, 100, 200):
        texts.append(_run(["--help"], columns))
        texts += [_run([command, "--help"], columns) for command in COMMANDS]
    for bundle in sorted((ROOT / "tests" / "fixtures" / "scenarios").glob("*/bundle.tar.gz")):
        for fmt in ("json", "text"):
            texts.append(_run(["diagnose", "--snapshot", str(bundle.relative_to(ROOT)), "--format", fmt]))
    for folder in ("tests/evidence/cases", "tests/evidence/data/cases"):
        for paste in sorted((ROOT / folder).glob("*.txt")):
            for fmt in ("json", "text"):
                texts.append(_run(["diagnose", "--evidence", str(paste.relative_to(ROOT)), "--format", fmt]))
    return texts


if __name__ == "__main__":
    os.chdir(ROOT)
    Path(sys.argv[1]).write_text("".join(outputs()))
