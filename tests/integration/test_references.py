"""The repository is whole: every file it tracks points only at what a clone holds or at a primary
source. A path under the repository's own folders (docs/, tests/, src/, runbooks/, ...) must exist,
read from the root, from the citing file's folder, or from the package (src/allreduce_doctor/, where
code cites `probes/derive.py`); a path with a placeholder (`NAME`) or a glob must match a file. Nothing
points outside the clone: no `../shared`, no reviewer's notes, no file a user's checkout cannot have."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "allreduce_doctor"
TOP = "docs|tests|src|runbooks|probes|benchmarks|signatures|examples|\\.ci"
PATH_RE = re.compile(rf"(?<![\w./-])((?:{TOP})/[\w./*-]*\.(?:md|py|yaml|yml|txt|toml|json|gz|svg|sh))(?![\w/])")
PLACEHOLDER_RE = re.compile(r"/[A-Z][A-Z_]*(?=/)")
# Notes that lived beside the repository while it was written; what they held is in docs/.
OUTSIDE_RE = re.compile(r"\.\./shared\b|\bshared/(?:reference|reviews|cases)\b|/work/shared\b|reviews/domain-"
                        r"|\b(?:CAUSES|COUNTERS|SYSFS_LAYOUT|DESIGN)\.md\b")
BINARY = {".gz", ".png", ".svg", ".tar"}
# Verbatim text from elsewhere (reporters' pastes, tools' outputs): their paths are the poster's, not ours.
QUOTED = ("tests/evidence/cases/", "tests/evidence/data/", "tests/fixtures/outputs/")


def _tracked() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout (an sdist): the tracked files are unknown")
    return [ROOT / name for name in out.split("\0") if name]


def _texts():
    for path in _tracked():
        if path.suffix in BINARY or not path.is_file() or path.relative_to(ROOT).as_posix().startswith(QUOTED):
            continue
        try:
            yield path, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue


def _exists(cited: str, citing: Path) -> bool:
    pattern = PLACEHOLDER_RE.sub("/*", cited)
    for base in (ROOT, citing.parent, PACKAGE):
        if "*" in pattern:
            if any(base.glob(pattern)):
                return True
        elif (base / cited).exists():
            return True
    return False


def dangling(path: Path, text: str) -> list[str]:
    """'file:line: what' for each reference of `text` that a clone cannot follow."""
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        out += [f"{where}:{number}: points outside the repository: {m.group(0)}" for m in OUTSIDE_RE.finditer(line)]
        out += [f"{where}:{number}: no such file: {m.group(1)}" for m in PATH_RE.finditer(line)
                if not _exists(m.group(1), path)]
    return out


def test_no_tracked_file_points_outside_the_repository_or_at_a_missing_path():
    assert [problem for path, text in _texts() if path != Path(__file__) for problem in dangling(path, text)] == []


@pytest.mark.parametrize("text, expected", [
    ("see ../shared/CAUSES.md", ["x.md:1: points outside the repository: ../shared",
                                 "x.md:1: points outside the repository: CAUSES.md"]),
    ("from shared/reference/outputs", ["x.md:1: points outside the repository: shared/reference"]),
    ("COUNTERS.md section 6", ["x.md:1: points outside the repository: COUNTERS.md"]),
    ("tests/fixtures/outputs/gone.txt", ["x.md:1: no such file: tests/fixtures/outputs/gone.txt"]),
    ("docs/nowhere-*.md", ["x.md:1: no such file: docs/nowhere-*.md"]),
    ("docs/counters.md section 6, probes/derive_counters.py, tests/fixtures/scenarios/NAME/bundle.tar.gz", []),
    ("NVIDIA/nccl src/transport/net_ib.cc, nccl-tests doc/PERFORMANCE.md, mnt/shared/incident", []),
])
def test_a_reference_a_clone_cannot_follow_is_named(text, expected):
    assert dangling(ROOT / "x.md", text) == expected
