"""The field corpus (tests/evidence/cases/index.yaml) is whole and split by its recorded rule."""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml

CASES = Path(__file__).resolve().parent / "cases"
INDEX = yaml.safe_load((CASES / "index.yaml").read_text())["cases"]


def test_corpus_has_forty_real_reports_each_with_a_url_and_cause():
    assert len(INDEX) >= 40
    assert len({c["id"] for c in INDEX}) == len(INDEX)
    for case in INDEX:
        assert (CASES / case["file"]).read_text().strip(), case["id"]
        assert case["url"].startswith("https://github.com/"), case["id"]
        assert case["cause"] and case["established"], case["id"]


def test_split_follows_the_recorded_rule():
    for case in INDEX:
        even = int(hashlib.sha256(case["id"].encode()).hexdigest(), 16) % 2 == 0
        assert case["half"] == ("dev" if even else "held_out"), case["id"]
    assert {c["half"] for c in INDEX} == {"dev", "held_out"}
