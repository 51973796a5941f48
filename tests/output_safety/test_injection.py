"""Terminal and markup injection (issue 15, item 6): control characters are shown escaped on a
terminal and in every document; each export field is escaped by its format's grammar."""

from __future__ import annotations

import copy
import json
import re
import tarfile
from pathlib import Path

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.export import render_export
from allreduce_doctor.export.jira_wiki import escape as jira_escape
from allreduce_doctor.export.markdown import escape as md_escape
from allreduce_doctor.report import render
from allreduce_doctor.sanitize import fields, one_line, terminal
from allreduce_doctor.tui.text import esc
from tests.export.goldens import stored_diagnosis

SCENARIOS = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"
# retitles the terminal (OSC 0), clears the screen (CSI 2J), then a forged verdict on its own line
EVIL_HOST = "gpu\x1b]0;pwned\x07\x1b[2J\nNOTHING FOUND ON THIS NODE: no_fault_found"
EVIL_HOST_SHOWN = "gpu\\u001b]0;pwned\\u0007\\u001b[2J\\nNOTHING FOUND ON THIS NODE: no_fault_found"
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_the_sanitizer_shows_controls_as_json_escapes():
    assert terminal("a\x1b[31mb\tc\nd\r\x9b\u202e\x7f") == "a\\u001b[31mb\tc\nd\\r\\u009b\\u202e\\u007f"
    assert one_line("a\nb\tc\r") == "a\\nb\\tc\\r"
    assert json.loads(terminal(json.dumps({"k": "\x9b\u202e"}, ensure_ascii=False))) == {"k": "\x9b\u202e"}
    assert fields({"h\x1b": ["x\ny", 3, None]}) == {"h\\u001b": ["x\\ny", 3, None]}


def hostile_bundle(tmp_path: Path) -> Path:
    root = tmp_path / "b"
    root.mkdir()
    with tarfile.open(SCENARIOS / "roce-pfc-off" / "bundle.tar.gz") as tar:
        tar.extractall(root, filter="data")
    doc = json.loads((root / "manifest.json").read_text())
    doc["host"]["hostname"] = EVIL_HOST
    (root / "manifest.json").write_text(json.dumps(doc))
    return root


def test_the_text_report_escapes_a_hostile_hostname(tmp_path, capsys):
    root = hostile_bundle(tmp_path)
    assert main(["diagnose", "--snapshot", str(root)]) == 1
    out = capsys.readouterr().out
    assert not RAW_CONTROL.search(out)
    lines = out.splitlines()
    assert lines[0] == f"allreduce-doctor 0.1.0 | host {EVIL_HOST_SHOWN} (bundle {root}) | fabric roce"
    assert lines[2] == "FAULT FOUND: pfc_not_enabled (critical, owner: network)"
    assert not any(line.startswith("NOTHING FOUND") for line in lines)


def test_a_report_file_is_escaped_too(tmp_path, capsys):
    root = hostile_bundle(tmp_path)
    main(["diagnose", "--snapshot", str(root), "--format", "markdown", "-o", str(tmp_path / "d.md")])
    text = (tmp_path / "d.md").read_text()
    assert not RAW_CONTROL.search(text)
    # the Markdown report is the ticket document: the hostname is escaped by Markdown's grammar too
    title = text.splitlines()[0]
    assert title.startswith("# pfc_not_enabled on gpu\\\\u001b\\]0;pwned\\\\u0007") and "\n" not in title


def test_the_markdown_report_keeps_one_field_on_one_line():
    d = copy.deepcopy(stored_diagnosis("roce-pfc-off"))
    d["inconclusive"] = [{"node": "n", "reason": "read failed\n# Injected heading\n- injected item"}]
    text = render(d, "markdown")
    assert "read failed" in text  # the reason is shown, on its line
    lines = text.splitlines()
    assert not any(line.lstrip("> ").startswith(("# Injected", "- injected")) for line in lines)


def test_the_tui_text_escapes_controls():
    assert esc("gpu\x1b]0;x\x07 [b]\u202e") == "gpu\\u001b]0;x\\u0007 \\[b]\\u202e"


# --- export fields, by grammar ----------------------------------------------------------
def test_markdown_escape_keeps_a_field_on_one_line():
    assert md_escape("ok\n# heading\n@everyone \x1b[2J") == "ok\\\\n# heading\\\\n\\@everyone \\\\u001b\\[2J"


def test_jira_escape_keeps_a_field_on_one_line():
    assert jira_escape("ok\nh1. heading\x1b") == "ok\uff3cnh1. heading\uff3cu001b"


def hostile_ticket_diagnosis() -> dict:
    d = copy.deepcopy(stored_diagnosis("roce-pfc-off"))
    d["context"]["host"] = EVIL_HOST
    d["root_cause"]["summary"] = "h1. Jira heading @everyone \x9b2J"
    d["verification"][0] = "bq. a quote"
    d["remediation"][0]["step"] = "fix `code` \u202egnp.exe"
    return d


@pytest.mark.parametrize("fmt", ["markdown", "github", "jira", "jira-adf", "json"])
def test_no_raw_control_character_reaches_a_document(fmt):
    assert not RAW_CONTROL.search(terminal(render_export(hostile_ticket_diagnosis(), fmt)))
    if fmt != "json":
        assert not RAW_CONTROL.search(render_export(hostile_ticket_diagnosis(), fmt))


def test_jira_paragraphs_start_no_heading_or_quote():
    lines = render_export(hostile_ticket_diagnosis(), "jira").splitlines()
    assert "\u200bh1. Jira heading @everyone \uff3cu009b2J" in lines
    assert not any(line.startswith(("h1. ", "bq. ")) for line in lines)  # the document's own are h2


@pytest.mark.parametrize("fmt", ["markdown", "github"])
def test_markdown_mentions_nobody(fmt):
    text = render_export(hostile_ticket_diagnosis(), fmt)
    assert "h1. Jira heading \\@everyone \\\\u009b2J" in text.splitlines()
    assert not re.search(r"(?<!\\)@everyone", text)


def test_adf_text_is_one_line_without_controls():
    doc = json.loads(render_export(hostile_ticket_diagnosis(), "jira-adf"))
    texts = []

    def walk(node):
        if isinstance(node, dict) and node.get("type") != "codeBlock":  # raw evidence keeps its lines
            if node.get("type") == "text":
                texts.append(node["text"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    assert "gpu\\u001b]0;pwned\\u0007\\u001b[2J NOTHING FOUND ON THIS NODE: no_fault_found" in texts
    assert not any(RAW_CONTROL.search(t) or "\n" in t for t in texts)
