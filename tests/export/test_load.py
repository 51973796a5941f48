"""`export` input: a diagnosis file, or one clear line (exit 2) for anything else."""

from __future__ import annotations

import copy
import io
import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allreduce_doctor.cli import main
from allreduce_doctor.errors import DoctorError
from allreduce_doctor.export import FORMATS, render_export
from tests.export.goldens import GOLDEN, ROOT, stored_diagnosis

EXPECTED = "expected what `allreduce-doctor diagnose --format json` writes"


def run(capsys, *argv):
    code = main(["export", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path, content, name="d.json") -> str:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    return str(path)


def test_export_writes_the_document_to_stdout_and_to_a_file(capsys, tmp_path):
    diag = write(tmp_path, stored_diagnosis("ib-port-down"))
    code, out, err = run(capsys, "--to", "jira", diag)
    assert (code, err) == (0, "")
    assert out == (GOLDEN / "ib-port-down" / "jira.txt").read_text()
    code, out, err = run(capsys, "--to", "github", "--output", str(tmp_path / "t.md"), diag)
    assert (code, out, err) == (0, "", "")
    assert (tmp_path / "t.md").read_text() == (GOLDEN / "ib-port-down" / "github.md").read_text()


def test_export_reads_stdin(capsys, monkeypatch):
    data = json.dumps(stored_diagnosis("ib-port-down")).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = run(capsys, "--to", "json", "-")
    assert code == 0 and json.loads(out)["cause"] == "ib_port_down"


@pytest.mark.parametrize("content, message", [
    (b"", f"not JSON (line 1, column 1: Expecting value); {EXPECTED}"),
    (b"{\"verdict\": ", f"not JSON (line 1, column 13: Expecting value); {EXPECTED}"),
    (b"\xff\xfe\x00garbage", f"not UTF-8 text; {EXPECTED}"),
    ([1, 2], f"not a diagnosis (the top level is a list, not an object); {EXPECTED}"),
    ({}, f'not a diagnosis (it has no "verdict"); {EXPECTED}'),
    ({"format_version": 1, "tool_version": "0.1.0", "host": "n1", "time": "2026-01-01T00:00:00Z"},
     f'not a diagnosis (it has no "verdict"); {EXPECTED}'),
    ({"verdict": "maybe"}, f'not a diagnosis (verdict "maybe" is not fault, healthy or inconclusive); {EXPECTED}'),
    ({"verdict": "fault", "path": "x", "evidence": [], "context": {}}, f'not a diagnosis ("path" is a string, expected a list); {EXPECTED}'),
    ({"verdict": "healthy", "path": [], "evidence": [], "context": {}, "remediation": [3]},
     f"not a diagnosis (remediation[0] is a number, expected an object); {EXPECTED}"),
    ({"verdict": "healthy", "path": [{"node": ["x"]}], "evidence": [], "context": {}},
     f"not a diagnosis (path[0].node is a list, expected a string); {EXPECTED}"),
    ({"verdict": "healthy", "path": [{"node": "x", "facts": True}], "evidence": [], "context": {}},
     f"not a diagnosis (path[0].facts is true/false, expected a list); {EXPECTED}"),  # found by the property below
    ({"verdict": "healthy", "path": [], "evidence": [], "context": {}, "findings": [{"supporting": [7]}]},
     f"not a diagnosis (findings[0].supporting[0] is a number, expected a string); {EXPECTED}"),
    ({"verdict": "fault", "path": [], "evidence": [], "context": {}, "root_cause": None},
     f'not a diagnosis (verdict is "fault" but root_cause has no "id"); {EXPECTED}'),
    ({"verdict": "healthy", "path": [], "evidence": [], "context": {}, "fleet": {"nodes_checked": -1}},
     f"not a diagnosis (fleet.nodes_checked is a number, expected a count); {EXPECTED}"),
])
def test_not_a_diagnosis_is_one_line(capsys, tmp_path, content, message):
    path = write(tmp_path, content)
    code, out, err = run(capsys, "--to", "markdown", path)
    assert (code, out) == (2, "")
    assert err == f"allreduce-doctor: error: {path}: {message}\n"


def test_a_diagnosis_of_another_version(capsys, tmp_path):
    newer = dict(stored_diagnosis("ib-port-down"), format_version=2)
    path = write(tmp_path, newer)
    assert run(capsys, "--to", "json", path) == (2, "", f"allreduce-doctor: error: {path}: diagnosis format_version 2 is "
                                                 "newer than this tool reads (version 1); upgrade allreduce-doctor to export it\n")
    older = dict(newer, format_version=0)
    path = write(tmp_path, older)
    assert run(capsys, "--to", "json", path)[2] == (f"allreduce-doctor: error: {path}: diagnosis format_version 0 is older "
                                                   "than this tool reads (version 1); diagnose again with this version\n")


def test_missing_file_directory_and_format(capsys, tmp_path):
    assert run(capsys, "--to", "json", str(tmp_path / "nope.json"))[2] == \
        f"allreduce-doctor: error: {tmp_path / 'nope.json'}: no such file\n"
    assert run(capsys, "--to", "json", str(tmp_path))[2] == f"allreduce-doctor: error: {tmp_path}: not a file; {EXPECTED}\n"
    assert run(capsys, str(tmp_path / "x.json"))[2] == \
        "allreduce-doctor: error: export: which format? --to markdown|github|jira|jira-adf|json (or --post github|jira)\n"


def test_diagnose_export_writes_the_ticket_in_one_step(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    bundle = "tests/fixtures/scenarios/roce-pfc-off/bundle.tar.gz"
    res = subprocess.run([sys.executable, "-m", "allreduce_doctor", "diagnose", "--snapshot", bundle, "--export", "github"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert res.returncode == 1 and res.stderr == ""
    assert res.stdout.startswith("<!-- allreduce-doctor fingerprint: ard-")
    assert "**Fault found:** `pfc_not_enabled`" in res.stdout
    res = subprocess.run([sys.executable, "-m", "allreduce_doctor", "diagnose", "--snapshot", bundle, "--export", "pdf"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert (res.returncode, res.stdout) == (2, "")
    assert res.stderr == "allreduce-doctor: error: unknown export format 'pdf' (have: markdown, github, jira, jira-adf, json)\n"


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=30),
                       lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                       max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_diagnoses_render_or_fail_with_one_line(data):
    """Any JSON value in any place: every format renders, or the input is refused as a DoctorError."""
    d = copy.deepcopy(stored_diagnosis("ib-port-down"))
    for _ in range(data.draw(st.integers(1, 3))):
        target, key = _pick(d, data)
        target[key] = data.draw(JSONISH)
    fmt = data.draw(st.sampled_from(list(FORMATS)))
    try:
        render_export(d, fmt)
    except DoctorError as err:
        assert "\n" not in str(err)


def _pick(d, data):
    """A random (container, key) somewhere in the diagnosis."""
    node, key = d, data.draw(st.sampled_from(sorted(d)))
    while isinstance(node[key], (dict, list)) and node[key] and data.draw(st.booleans()):
        node = node[key]
        key = data.draw(st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node))))
    return node, key
