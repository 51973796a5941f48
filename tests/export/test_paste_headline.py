"""Pasted text alone shows no node: a paste whose walk ends at a no-fault end (a one-NIC-per-node
hardware limit, shared case-029) is never worded "nothing found on this node", in the text report,
the TUI's detail or a ticket; a node's own healthy diagnosis keeps that wording."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from allreduce_doctor.cli import main
from allreduce_doctor.export import render_export
from allreduce_doctor.export.ticket import build_ticket
from allreduce_doctor.report import verdict_words
from allreduce_doctor.tui.widgets.detail import verdict_markup

CASE = Path(__file__).resolve().parents[1] / "evidence" / "data" / "cases" / "case-029.txt"


def _run(fmt: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["diagnose", "--evidence", str(CASE), "--format", fmt])
    return code, out.getvalue()


def test_a_pasted_hardware_limit_is_no_fault_in_the_text_not_a_healthy_node():
    code, text = _run("text")
    assert code == 0
    assert text.splitlines()[2:4] == ["NO FAULT IN THE PASTED TEXT: expected_hardware_limit",
                                      "  the bandwidth is what the hardware can carry, not a fault"]
    assert "NOTHING FOUND" not in text


def test_the_ticket_and_the_tui_word_it_the_same_way():
    d = json.loads(_run("json")[1])
    assert d["verdict"] == "healthy" and d["context"]["source"] == "evidence"
    assert verdict_words(d) == "NO FAULT IN THE PASTED TEXT"
    assert build_ticket(d).headline == "No fault in the pasted text"
    assert "> **No fault in the pasted text:** `expected_hardware_limit`" in render_export(d, "markdown")
    assert "NO FAULT IN THE PASTED TEXT[/]: expected_hardware_limit" in verdict_markup(d, "")


def test_a_node_read_healthy_keeps_its_words():
    from tests.export.goldens import stored_diagnosis

    d = stored_diagnosis("ib-healthy")
    assert verdict_words(d) == "NOTHING FOUND ON THIS NODE"
    assert build_ticket(d).headline == "Nothing found on this node"


def test_a_pasted_hosts_header_never_says_this_node(tmp_path):
    from allreduce_doctor.fleet.pasted import render_hosts

    lines = CASE.read_text().splitlines()
    paste = tmp_path / "two.txt"
    paste.write_text("".join(
        f"root@{h}:~# dmesg | head -1\n[    0.000000] Linux version 5.15.0-91-generic (buildd@lcy02) #101-Ubuntu SMP\n"
        + "".join(line + "\n" for line in lines if line.startswith(h)) for h in ("server1", "server3")))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["diagnose", "--evidence", str(paste), "--format", "json"])
    data = json.loads(out.getvalue())
    assert [h["host"] for h in data["hosts"]] == ["server1", "server3"]
    own = data["hosts"][0]
    own.update(verdict="healthy", root_cause=None)  # a host whose part walked to a no-fault end
    assert "==================== host server1: No fault in the pasted text ====================" in \
        render_hosts(data, "text")
    data.update(verdict="healthy", root_cause=None, healthy={"id": "expected_hardware_limit", "title": "capped"})
    assert render_hosts(data, "text").splitlines()[2] == "NO FAULT IN THE PASTED TEXT OF ANY HOST: expected_hardware_limit"
