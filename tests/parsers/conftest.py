"""Shared helpers for the parser tests: read a real output fixture, check JSON-cleanliness."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "outputs"
HEADER = ("# source:", "# situation:", "# ---")


def read_fixture(name: str) -> str:
    """The data of tests/fixtures/outputs/<name>, without its 3 header lines."""
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines(keepends=True)
    for line, prefix in zip(lines, HEADER):
        assert line.startswith(prefix), f"{name}: header line should start with {prefix!r}"
    return "".join(lines[3:])


def assert_json_clean(value, where: str = "value") -> None:
    """Only dict/list/str/int/float/bool/None, string keys, finite floats; round-trips JSON."""
    if isinstance(value, dict):
        for key, item in value.items():
            assert isinstance(key, str), f"{where}: non-string key {key!r}"
            assert_json_clean(item, f"{where}[{key!r}]")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            assert_json_clean(item, f"{where}[{i}]")
    elif isinstance(value, float):
        assert math.isfinite(value), f"{where}: non-finite float"
    else:
        assert value is None or isinstance(value, (str, int, bool)), f"{where}: {type(value).__name__}"
    json.dumps(value, allow_nan=False)


@pytest.fixture(scope="session")
def fixture_text():
    return read_fixture


@pytest.fixture(scope="session")
def json_clean():
    return assert_json_clean


@pytest.fixture(scope="session")
def all_fixture_texts() -> dict[str, str]:
    """Every fixture's data by file name (for tests that sweep all of them)."""
    return {path.name: read_fixture(path.name) for path in sorted(FIXTURES.glob("*.txt"))}
