"""The command line: exit codes, formats, and one clear line for every kind of bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCEN = ROOT / "tests" / "fixtures" / "scenarios"


def cli(*args, cwd=ROOT, timeout=60):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "allreduce_doctor", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=cwd)


def bundle(name: str) -> str:
    return str(SCEN / name / "bundle.tar.gz")


def test_fault_exit_code_and_text_report():
    res = cli("--snapshot", bundle("roce-pfc-off"))
    assert res.returncode == 1, res.stderr
    assert "FAULT FOUND: pfc_not_enabled (critical, owner: network)" in res.stdout
    assert "Fix:" in res.stdout and "Verify the fix:" in res.stdout
    assert res.stderr == ""


def test_healthy_exit_code_and_next_step():
    res = cli("diagnose", "--snapshot", bundle("ib-healthy"))
    assert res.returncode == 0, res.stderr
    assert "NOTHING FOUND ON THIS NODE: no_fault_found" in res.stdout
    assert "not a two-node test" in res.stdout


def test_answer_two_nodes_leads_to_validate_at_scale():
    res = cli("diagnose", "--snapshot", bundle("roce-healthy"), "--format", "json",
              "--answer", "validated_scale=two_nodes")
    data = json.loads(res.stdout)
    assert data["verdict"] == "healthy"
    assert data["healthy"]["node"] == "roce.validate_at_scale"
    assert data["path"][-1] == {**data["path"][-1], "node": "roce.scale", "outcome": "two_nodes"}


def test_json_contract():
    res = cli("diagnose", "--snapshot", bundle("roce-gid-link-local"), "--format", "json")
    data = json.loads(res.stdout)
    assert data["verdict"] == "fault"
    assert data["root_cause"]["id"] == "wrong_gid_index" and data["root_cause"]["severity"] == "critical"
    assert data["findings"][0]["cause"] == "wrong_gid_index"
    assert {"node", "outcome", "value"} <= set(data["path"][0])
    assert data["path"][-1]["node"] == "roce.gid_index" and data["path"][-1]["outcome"] == "yes"
    witness = data["path"][-1]["value"][0]
    assert witness["pinned"] == "1" and witness["kind"] == "link_local" and witness["recommended_index"] == 3
    assert isinstance(data["evidence"], list) and isinstance(data["inconclusive"], list)
    assert data["context"]["host"] == "gpu-node-017" and data["context"]["fabric"] == "roce"


def test_forced_fabric_never_overrides_the_ports():
    res = cli("diagnose", "--snapshot", bundle("roce-healthy"), "--fabric", "ib", "--format", "json")
    data = json.loads(res.stdout)
    assert "roce" in data["runbooks"] and "ib" not in data["runbooks"]
    assert data["warnings"][0].startswith("--fabric ib ignored: this node has no InfiniBand ports")


def test_markdown_and_output_file(tmp_path):
    out = tmp_path / "report.md"
    res = cli("diagnose", "--snapshot", bundle("ib-pcie-x8"), "--format", "markdown", "--output", str(out))
    assert res.returncode == 1 and res.stdout == ""
    text = out.read_text()
    assert text.startswith("# pcie_link_degraded on gpu-node-017: a NIC or GPU trained below its PCIe speed or width\n")
    assert "| FAIL | Every RDMA NIC trained at its full PCIe speed and width | yes |" in text


@pytest.mark.parametrize("args, message", [
    (["--snapshot", "/nonexistent/b.tar.gz"],
     "allreduce-doctor: error: /nonexistent/b.tar.gz: no such file or directory; give the path of a bundle directory or .tar.gz\n"),
    (["--answer", "validated_scale"],
     "allreduce-doctor: error: --answer 'validated_scale': expected NAME=VALUE, e.g. --answer validated_scale=two_nodes\n"),
    (["runbook", "validate", "/nonexistent.yaml"], "allreduce-doctor: error: /nonexistent.yaml: no such runbook file\n"),
])
def test_bad_input_gives_one_line(args, message):
    res = cli(*args)
    assert res.returncode == 2
    assert res.stderr == message
    assert res.stdout == ""


def test_damaged_bundle_gives_one_line(tmp_path):
    data = Path(bundle("ib-healthy")).read_bytes()
    broken = tmp_path / "cut.tar.gz"
    broken.write_bytes(data[: len(data) // 2])
    res = cli("--snapshot", str(broken))
    assert res.returncode == 2
    assert res.stderr.startswith(f"allreduce-doctor: error: {broken}: truncated or corrupt archive (")
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr


def _runbook(tmp_path, body: str) -> str:
    path = tmp_path / "bad.yaml"
    path.write_text(body)
    return path.name  # relative to cwd: the message names the file as the user gave it


GOOD_HEAD = "runbook: solo\ntitle: t\nentry: a\nnodes:\n  a:\n    title: t\n    why: w\n"


@pytest.mark.parametrize("body, message", [
    (GOOD_HEAD + "    check: 'rdma.prots == 1'\n    yes: {next: z, means: m}\n    no: {next: z, means: m}\n"
     "    unknown: {next: z, means: m}\n  z:\n    healthy: no_fault_found\n    summary: s\n    next_steps: [x]\n",
     "bad.yaml:8:13: bad condition: unknown fact 'rdma.prots' (at nodes.a.check) did you mean 'rdma.ports'?"),
    (GOOD_HEAD + "    check: 'rdma.uverbs'\n    yes: {next: z, means: m}\n    no: {next: z, means: m}\n"
     "    unknown: {next: z, means: m}\n  z:\n    cause: pfc_not_enabeld\n",
     "bad.yaml:13:12: unknown cause 'pfc_not_enabeld' (at nodes.z.cause) did you mean 'pfc_not_enabled'?"),
    ("runbook: solo\n  entry: [\n", "bad.yaml:2:8: YAML syntax error:"),
])
def test_broken_runbook_gives_file_line_col(tmp_path, body, message):
    res = cli("runbook", "validate", _runbook(tmp_path, body), cwd=tmp_path)
    assert res.returncode == 2
    line = res.stderr.removeprefix("allreduce-doctor: error: ")
    assert line.startswith(message), res.stderr
    assert res.stderr.count("\n") == 1


def test_unreadable_runbook_file(tmp_path):
    path = tmp_path / "dir.yaml"
    path.mkdir()
    res = cli("runbook", "validate", str(path))
    assert res.returncode == 2 and res.stderr == f"allreduce-doctor: error: {path}: no such runbook file\n"


def test_version_and_help_import_neither_textual_nor_networkx():
    code = ("import sys\nfrom allreduce_doctor.cli import main\n"
            "for args in (['--version'], ['--help']):\n"
            "    try:\n        main(args)\n    except SystemExit:\n        pass\n"
            "print(sorted(m for m in ('textual', 'networkx', 'yaml', 'psutil') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert res.stdout.strip().splitlines()[-1] == "[]"


def test_probes_list_names_every_file_and_command():
    res = cli("probes", "list")
    assert res.returncode == 0
    assert "/sys/class/infiniband/{device}/ports/{port}/hw_counters/*" in res.stdout
    assert "mlnx_qos -i {netdev}" in res.stdout
    row = next(line for line in res.stdout.splitlines() if line.startswith("lspci "))
    assert "20s" in row and "root" in row


def test_runbook_graph_formats():
    dot = cli("runbook", "graph", "--format", "dot", "--runbook", "roce")
    assert dot.returncode == 0 and dot.stdout.lstrip().startswith("digraph")
    assert "pfc_not_enabled" in dot.stdout
    mermaid = cli("runbook", "graph")
    assert mermaid.returncode == 0 and mermaid.stdout.lstrip().startswith(("flowchart", "graph"))


def test_text_report_names_the_evidence_it_read():
    case = ROOT / "tests" / "evidence" / "data" / "cases" / "case-001.txt"
    res = cli("diagnose", "--evidence", str(case))
    assert res.returncode == 3, res.stderr  # the paste does not show which GID NCCL used
    assert "INCONCLUSIVE" in res.stdout
    assert f"Evidence read:\n  {case}: 7 of 9 lines recognized: nccl_log (lines 1)" in res.stdout
