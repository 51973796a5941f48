"""The headline is the first ranked candidate and the Fix printed is the headline cause's fix, in every
renderer (issue 30, item 5). The paste: a RoCE completion error 12 (nccl-426 of the field corpus) with a
leftover NCCL_P2P_DISABLE=1. The runbooks decide the P2P setting, the ranking puts the GID index first:
the headline said wrong_gid_index while the Fix said "Remove NCCL_P2P_DISABLE", and the tickets said
`inconclusive`."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.export import render_export
from allreduce_doctor.oneline import unreferenced
from allreduce_doctor.runbook.causes import CAUSES
from allreduce_doctor.tui.widgets.detail import cause_markup, verdict_markup

CASE = Path(__file__).resolve().parents[1] / "evidence" / "cases" / "nccl-426.txt"
GID_FIX = unreferenced(CAUSES["wrong_gid_index"].remediation[0])  # shown with no deciding value
P2P_FIX = CAUSES["p2p_disabled_by_env"].remediation[0]


@pytest.fixture(scope="module")
def paste(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("paste") / "gid-and-p2p.txt"
    path.write_text(CASE.read_text() + "NCCL_P2P_DISABLE=1\n")
    return path


def _run(paste: Path, fmt: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["diagnose", "--evidence", str(paste), "--format", fmt])
    return out.getvalue()


def test_the_json_heads_with_the_first_candidate_and_its_fix(paste):
    d = json.loads(_run(paste, "json"))
    assert [(f["cause"], f["confidence"]) for f in d["findings"]] == [
        ("wrong_gid_index", "medium"), ("mtu_mismatch", "low"), ("fabric_unreachable", "low"), ("p2p_disabled_by_env", "high")]
    assert (d["verdict"], d["root_cause"]["id"]) == ("inconclusive", "wrong_gid_index")
    assert [r["step"] for r in d["remediation"]] == [*CAUSES["wrong_gid_index"].remediation, P2P_FIX]
    assert d["verification"][0] == CAUSES["wrong_gid_index"].verification[0]


def test_the_text_report_prints_the_headlines_fix_first(paste):
    lines = _run(paste, "text").splitlines()
    assert lines[2] == "INCONCLUSIVE: wrong_gid_index (critical, owner: platform)"
    assert lines[lines.index("Candidates (most likely first):") + 1].startswith("  1. wrong_gid_index (medium confidence)")
    assert lines[lines.index("Fix:") + 1] == f"  1. [platform] {GID_FIX}"


@pytest.mark.parametrize("fmt, head, first_fix", [
    ("markdown", "> **Inconclusive:** `wrong_gid_index` (", f"1. **platform**: {GID_FIX}"),
    ("github", "> **Inconclusive:** `wrong_gid_index` (", f"1. **platform**: {GID_FIX}"),
    ("jira", "*Inconclusive:* {{wrong_gid_index}} (", f"# *platform*: {GID_FIX}"),
])
def test_every_ticket_heads_with_the_same_cause_and_fix(paste, fmt, head, first_fix):
    d = json.loads(_run(paste, "json"))
    doc = _run(paste, "markdown") if fmt == "markdown" else render_export(d, fmt)
    assert head in doc
    assert "`inconclusive`" not in doc and "{{inconclusive}}" not in doc
    fixes = [line for line in doc.splitlines() if GID_FIX.split(" (")[0] in line or P2P_FIX in line]
    assert fixes[0] == first_fix


def test_the_ticket_json_and_the_tui_say_the_same(paste):
    d = json.loads(_run(paste, "json"))
    ticket = json.loads(render_export(d, "json"))
    assert (ticket["cause"], ticket["remediation"][0]["step"]) == ("wrong_gid_index", GID_FIX)
    assert ticket["title"].startswith("inconclusive on -worker-1: wrong_gid_index suspected, evidence missing")
    assert "wrong_gid_index" not in [s["cause"] for s in ticket["secondary"]]
    assert "[b]wrong_gid_index[/] (critical, owner platform)" in verdict_markup(d, "")
    tui = cause_markup(d).splitlines()
    assert tui[tui.index("[b $text-accent]Remediation[/]") + 1] == f"1. \\[platform] {GID_FIX}"
