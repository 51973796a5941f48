"""What every format must get right whatever the values: escaping, folding, structure, limits."""

from __future__ import annotations

import json
import re

import pytest

from allreduce_doctor.export import FORMATS, render_export
from allreduce_doctor.export.jira_wiki import escape as jira_escape
from allreduce_doctor.export.markdown import escape as md_escape
from tests.export.adf_schema import validate
from tests.export.goldens import goldens, stored_diagnosis
from tests.export.hostile import HOSTILE, hostile_diagnosis

UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def _rows(text: str, start: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(start)]


def test_jira_escapes_markup_in_values():
    assert jira_escape("a | b {code}x{code} [l|u] *s* !i.png!") == r"a \| b \{code\}x\{code\} \[l\|u\] \*s\* \!i.png\!"
    assert jira_escape("6.8.0-45-generic port_xmit_wait x - y") == "6.8.0-45-generic port_xmit_wait x - y"
    assert jira_escape("--pfc _em_ +ins+ ^sup^ ~sub~ ??cite??") == r"\-\-pfc \_em\_ \+ins\+ \^sup\^ \~sub\~ \?\?cite\?\?"
    assert jira_escape("C:\\dir \\| x") == "C:\uff3cdir \uff3c\\| x"


def test_jira_document_with_hostile_values_keeps_its_tables():
    text = render_export(hostile_diagnosis(), "jira")
    markup = re.sub(r"^\{noformat\}\n.*?\n\{noformat\}$", "", text, flags=re.S | re.M)  # literal inside
    assert "{code}" not in markup.replace(r"\{code\}", "")
    assert "{noformat}" not in markup
    header = {len(UNESCAPED_PIPE.findall(line)) for line in _rows(markup, "||")}
    for line in _rows(markup, "|"):
        if line.startswith("||"):
            continue
        # every row of every table has as many cell separators as some header
        assert len(UNESCAPED_PIPE.findall(line)) in {n // 2 for n in header}, line
    escaped = jira_escape(HOSTILE)
    assert f"# *network*: {escaped}" in text  # the owner in bold, the step escaped
    assert f"|{escaped}|" in text  # the observed value, cell by itself


def test_jira_noformat_blocks_hold_the_exact_json():
    d = hostile_diagnosis()
    text = render_export(d, "jira")
    blocks = re.findall(r"^\{noformat\}\n(.*?)\n\{noformat\}$", text, re.S | re.M)
    assert blocks and all(line.strip() != "{noformat}" for b in blocks for line in b.splitlines())
    values = [json.loads(b) for b in blocks]
    assert d["evidence"][1]["observed"] in values


def test_markdown_escapes_markup_in_values():
    assert md_escape("a|b <x> @here #12 *s* [l](u) `c` ~d~ &amp;") == r"a\|b \<x\> \@here \#12 \*s\* \[l\](u) \`c\` \~d\~ \&amp;"
    assert md_escape("port_xmit_wait _em_") == r"port_xmit_wait \_em\_"


@pytest.mark.parametrize("fmt", ["github", "markdown"])
def test_markdown_tables_and_raw_blocks_survive_hostile_values(fmt):
    d = hostile_diagnosis()
    text = render_export(d, fmt)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|---"):
            width = line.count("|") - 1
            j = i + 1
            while j < len(lines) and lines[j].startswith("| "):
                assert len(UNESCAPED_PIPE.findall(lines[j])) == width + 1, lines[j]
                j += 1
    markup = re.sub(r"^(`{3,})json\n.*?\n\1$", "", text, flags=re.S | re.M)  # literal inside fences
    assert "<script>" not in markup and r"\<script\>" in markup
    assert "@here" not in markup.replace(r"\@here", "")
    assert "</details>" not in markup.replace("\n\n</details>", "")
    assert "- \\# not a heading" in text
    raw = re.findall(r"^(`{3,})json\n(.*?)\n\1$", text, re.S | re.M)
    assert d["evidence"][1]["observed"] in [json.loads(body) for _, body in raw]


def test_adf_keeps_values_verbatim_and_valid():
    doc = json.loads(render_export(hostile_diagnosis(), "jira-adf"))
    assert validate(doc) == []
    texts = [n["text"] for n in _walk(doc) if n.get("type") == "text"]
    assert HOSTILE in texts


def _walk(node):
    yield node
    for child in node.get("content", []):
        yield from _walk(child)


@pytest.mark.parametrize("name", goldens())
def test_adf_of_every_golden_is_valid(name):
    assert validate(json.loads(render_export(stored_diagnosis(name), "jira-adf"))) == []


def test_validator_rejects_what_adf_does_not_allow():
    ok = {"type": "paragraph", "content": [{"type": "text", "text": "x"}]}

    def doc(*nodes):
        return {"version": 1, "type": "doc", "content": list(nodes)}

    assert validate(doc(ok)) == []
    assert validate(doc({"type": "expand", "content": [ok]})) == ["$.content[0]: node type 'expand' is not allowed"]
    assert validate(doc({"type": "heading", "attrs": {"level": 7}, "content": [{"type": "text", "text": "h"}]})) == \
        ["$.content[0]: heading attrs.level=7 is not allowed"]
    assert validate(doc({"type": "panel", "attrs": {"panelType": "tip"}, "content": [ok]})) == \
        ["$.content[0]: panel attrs.panelType='tip' is not allowed"]
    assert validate(doc({"type": "paragraph", "content": [{"type": "text", "text": ""}]})) == \
        ["$.content[0].content[0]: a text node needs non-empty text"]
    assert validate(doc({"type": "paragraph", "content": [{"type": "text", "text": "x", "marks": [{"type": "code"}, {"type": "strong"}]}]})) == \
        ["$.content[0].content[0]: the code mark combines only with link"]
    assert validate(doc({"type": "codeBlock", "attrs": {"language": "json"}, "content": [{"type": "text", "text": "x", "marks": [{"type": "em"}]}]})) == \
        ["$.content[0].content[0]: text in a codeBlock may not have marks"]
    assert validate(doc({"type": "bulletList", "content": [ok]})) == ["$.content[0].content[0]: paragraph may not be inside bulletList"]
    assert validate(doc({"type": "rule", "attrs": {"x": 1}})) == ["$.content[0]: rule takes no attrs"]
    assert validate(doc({"type": "paragraph", "content": [{"type": "text", "text": "l", "marks": [{"type": "link", "attrs": {}}]}]})) == \
        ["$.content[0].content[0].marks[0]: link needs attrs.href"]
    assert validate({"type": "doc", "version": 2, "content": []}) == ["$: doc.version must be 1"]


def test_github_body_stays_under_the_limit_with_huge_evidence():
    d = stored_diagnosis("ib-healthy")
    big = [{"name": f"port{i}", "blob": "x" * 400} for i in range(20)]
    d["evidence"] = [dict(row, observed=big, fact=f"{row['fact']}#{i}") for i, row in enumerate(d["evidence"] * 5)]
    text = render_export(d, "github")
    assert len(text) <= 65_536
    assert "Left out to stay under the 65,536-character limit:" in text
    assert "more evidence rows (of checks that passed) are in the JSON export" not in text or len(text) <= 65_536


def test_the_raw_value_that_decided_is_kept_longest():
    d = stored_diagnosis("roce-pfc-off")
    text = render_export(d, "jira-adf")
    assert "roce.pfc: deciding value" in text  # the witness outlives every other raw value


def test_formats_are_the_documented_ones():
    assert list(FORMATS) == ["markdown", "github", "jira", "jira-adf", "json"]


def test_markdown_is_the_title_then_the_github_body():
    d = stored_diagnosis("ib-port-down")
    md, gh = render_export(d, "markdown"), render_export(d, "github")
    title = json.loads(render_export(d, "json"))["title"]
    assert md == f"# {md_escape(title)}\n\n{gh}"


def _cli_out(capsys, *args: str) -> tuple[int, str]:
    from allreduce_doctor.cli import main

    code = main(list(args))
    return code, capsys.readouterr().out


@pytest.mark.parametrize("name", ["roce-pfc-off", "ib-healthy"])
def test_the_markdown_report_is_the_exported_markdown_document(name, capsys):
    """`diagnose --format markdown` and `diagnose --export markdown` write one document: the export's."""
    bundle = f"tests/fixtures/scenarios/{name}/bundle.tar.gz"
    report = _cli_out(capsys, "diagnose", "--snapshot", bundle, "--format", "markdown")
    export = _cli_out(capsys, "diagnose", "--snapshot", bundle, "--export", "markdown")
    assert report == export
    title = json.loads(_cli_out(capsys, "diagnose", "--snapshot", bundle, "--export", "json")[1])["title"]
    assert report[1].startswith(f"# {md_escape(title)}\n\n<!-- allreduce-doctor fingerprint: ")
    assert [line for line in report[1].splitlines() if line.startswith("## ")][:4] == [
        "## Symptom", "## Root cause", "## Decision path", "## Evidence"]


def test_the_fleet_markdown_report_is_the_exported_document_and_its_fleet_section(tmp_path, capsys):
    from tests.fleet.conftest import FLEET, lay_out

    folder = str(lay_out(tmp_path / "fleet", FLEET))
    code, report = _cli_out(capsys, "fleet", "--snapshots", folder, "--format", "markdown")
    _, export = _cli_out(capsys, "fleet", "--snapshots", folder, "--export", "markdown")
    assert code == 1 and report.startswith(export) and report[len(export):].startswith("\n## Fleet\n")
