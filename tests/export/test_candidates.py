"""A paste's ranked differential (issue 12) reaches the ticket documents: the candidates in order,
each with its confidence and the one step that tells them apart (Markdown, GitHub, Jira)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from allreduce_doctor.cli import main
from allreduce_doctor.export import render_export

CASE = Path(__file__).resolve().parents[1] / "evidence" / "data" / "cases" / "case-001.txt"


def _diagnosis() -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["diagnose", "--evidence", str(CASE), "--format", "json"])
    return json.loads(out.getvalue())


def test_the_candidates_are_listed_in_order_with_their_next_step():
    d = _diagnosis()
    ranked = [f for f in d["findings"] if f.get("confidence")]
    assert len(ranked) >= 2
    text = render_export(d, "markdown")
    table = text.split("## Candidates\n", 1)[1].lstrip("\n").split("\n\n", 1)[0].splitlines()[2:]
    assert [row.split(" | ")[1].strip("` ") for row in table] == [f["cause"] for f in ranked]
    assert all(f"| {f['confidence']} |" in row for f, row in zip(ranked, table))
    assert "()" not in text.split("**Confidence:**", 1)[1].splitlines()[0]  # the reason is given
    for fmt in ("github", "jira"):
        assert ranked[0]["cause"] in render_export(d, fmt).split("andidates", 1)[1]


def test_a_node_diagnosis_has_no_candidates_section():
    from tests.export.goldens import stored_diagnosis

    assert "## Candidates" not in render_export(stored_diagnosis("roce-pfc-off"), "markdown")
