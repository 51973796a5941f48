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


def test_every_case_names_a_catalogue_cause_a_symptom_and_a_batch():
    """A label outside the catalogue would score as a miss no rule could fix (or hide a typo)."""
    causes = set(yaml.safe_load((CASES.parents[2] / "runbooks" / "catalogue" / "causes.yaml").read_text()))
    for case in INDEX:
        assert case["cause"] in causes, (case["id"], case["cause"])
        assert case.get("symptom") in (None, "hang", "slow", "crash", "error"), case["id"]
        assert case.get("batch", 1) in range(1, 11), case["id"]
    assert len({c["url"] for c in INDEX}) == len(INDEX)  # one case per thread
