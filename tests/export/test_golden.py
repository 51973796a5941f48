"""Exporter goldens: full documents for goldens.KEPT only, every other scenario checked by content.

ONE command rewrites the kept goldens (and only those):
    PYTHONPATH=src python -m tests.export.make_golden            (after an intended exporter change)
    PYTHONPATH=src python -m tests.export.make_golden --diagnose (after a runbook change)
then review the diff. The other scenario bundles have no golden files: each is diagnosed today and
its documents are asserted by what they must say (cause, deciding values, limits, table structure).
"""

from __future__ import annotations

import json
import re

import pytest

from allreduce_doctor.export.jira_wiki import escape as jira_escape
from allreduce_doctor.export.layout import CELL
from allreduce_doctor.export.markdown import escape as md_escape
from allreduce_doctor.oneline import short
from tests.export.adf_schema import validate
from tests.export.goldens import FILES, GOLDEN, KEPT, diagnose_bundle, goldens, render_all, scenarios, stored_diagnosis

REGEN = "regenerate: PYTHONPATH=src python -m tests.export.make_golden"
UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def _cause(d: dict) -> str:
    return (d["root_cause"] or d["healthy"] or {}).get("id")


def test_only_the_kept_scenarios_have_goldens():
    assert goldens() == sorted(KEPT), REGEN
    assert set(KEPT) <= set(scenarios())
    verdicts = {name: (stored_diagnosis(name)["verdict"], stored_diagnosis(name)["context"]["fabric"]) for name in KEPT}
    assert verdicts == {"ib-port-down": ("fault", "ib"), "roce-pfc-off": ("fault", "roce"), "ib-healthy": ("healthy", "ib")}


@pytest.mark.parametrize("name", KEPT)
def test_golden(name):
    rendered = render_all(stored_diagnosis(name))
    for fmt, filename in FILES.items():
        expected = (GOLDEN / name / filename).read_text()
        assert rendered[fmt] == expected, f"{name}/{filename} differs; {REGEN} and review the diff"


@pytest.mark.parametrize("name", KEPT)
def test_the_stored_input_still_has_todays_verdict_and_cause(name):
    stored, today = stored_diagnosis(name), diagnose_bundle(name)
    assert (stored["verdict"], _cause(stored)) == (today["verdict"], _cause(today)), f"{REGEN} --diagnose"


def _adf_rows(node: dict):
    """Each ADF table row as the text of its cells."""
    if node.get("type") == "tableRow":
        yield ["".join(_adf_text(cell)) for cell in node["content"]]
    for child in node.get("content", []):
        yield from _adf_rows(child)


def _adf_text(node: dict):
    if node.get("type") == "text":
        yield node["text"]
    for child in node.get("content", []):
        yield from _adf_text(child)


def _path_row(step: dict) -> list[str]:
    """The decision-path table row of a deciding step: mark, check, outcome, meaning, value."""
    value = short(step["value"], CELL, decides=step.get("decides")) if step["value"] not in (None, "", [], {}) else "-"
    return ["FAIL", step["title"], step["outcome"], step["means"] or "-", value]


def _markdown_tables_keep_their_columns(markup: str) -> int:
    """Every row of a GFM table has its header's cell separators; returns the tables seen."""
    tables = [block.splitlines() for block in markup.split("\n\n") if block.split("\n", 2)[1:2] and
              block.split("\n", 2)[1].startswith("|---")]
    for lines in tables:
        width = len(UNESCAPED_PIPE.findall(lines[0]))
        for line in lines[2:]:
            assert len(UNESCAPED_PIPE.findall(line)) == width, f"a value broke its table: {line[:200]}"
    return len(tables)


def _jira_tables_keep_their_columns(markup: str) -> None:
    width = 0
    for line in markup.splitlines():
        if line.startswith("||"):  # ||a||b|| heads a table of |x|y| rows
            width = len(UNESCAPED_PIPE.findall(line)) // 2
        elif line.startswith("|"):
            assert len(UNESCAPED_PIPE.findall(line)) == width, f"a value broke its table: {line[:200]}"


@pytest.mark.parametrize("name", scenarios())
def test_todays_diagnosis_of_every_bundle_exports_what_it_found(name):
    """Whatever the runbooks say today, every format names the cause, shows the deciding step with
    its value, keeps its size limit and its tables, and the ticket model agrees with the diagnosis."""
    today = diagnose_bundle(name)
    docs = render_all(today)
    # an inconclusive ticket names no cause: it files as "inconclusive" (export/ticket.py)
    cause = "inconclusive" if today["verdict"] == "inconclusive" else _cause(today)
    ticket = json.loads(docs["json"])
    assert (ticket["verdict"], ticket["cause"]) == (today["verdict"], cause)
    assert ticket["title"].startswith(f"{cause} on ") and len(ticket["title"]) <= 255 and "\n" not in ticket["title"]
    deciding = [f["node"] for f in today["findings"] if f["cause"] == cause] if today["verdict"] == "fault" else []
    assert ticket["deciding"] == deciding
    assert [s["node"] for s in ticket["path"] if s["mark"] == "FAIL"] == [s["node"] for s in today["path"] if s["node"] in deciding]
    assert sorted(s["cause"] for s in ticket["secondary"]) == sorted(f["cause"] for f in today["findings"] if f["cause"] != cause)

    md, jira = docs["github"], docs["jira"]
    adf = json.loads(docs["jira-adf"])
    assert f"`{cause}`" in md and f"{{{{{jira_escape(cause)}}}}}" in jira and cause in "".join(_adf_text(adf))
    adf_rows = list(_adf_rows(adf))
    for step in (s for s in today["path"] if s["node"] in deciding):
        row = _path_row(step)
        assert "| " + " | ".join(md_escape(c) for c in row) + " |" in md.splitlines(), (name, row)
        assert "|" + "|".join(jira_escape(c) for c in row) + "|" in jira.splitlines(), (name, row)
        assert row in adf_rows, (name, row)

    assert docs["markdown"].startswith(f"# {md_escape(ticket['title'])}\n\n<!-- allreduce-doctor fingerprint: ")
    assert len(md) <= 65_536 and len(docs["markdown"]) <= 65_536 and len(jira) <= 32_767
    assert validate(adf) == []
    assert len(json.dumps(adf, ensure_ascii=False, separators=(",", ":"))) <= 32_767
    assert md.startswith(f"<!-- allreduce-doctor fingerprint: {ticket['fingerprint']} -->\n")
    assert ticket["labels"] == ["allreduce-doctor", cause, ticket["fingerprint"]]
    outside_raw = re.sub(r"<details>.*?</details>", "", md, flags=re.S)
    assert _markdown_tables_keep_their_columns(outside_raw) >= 4
    assert re.findall(r"(?<!\\)<(?!!-- allreduce-doctor)", outside_raw) == []  # no HTML from a value
    _jira_tables_keep_their_columns(re.sub(r"\{noformat\}.*?\{noformat\}", "", jira, flags=re.S))
