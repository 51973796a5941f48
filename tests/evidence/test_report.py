"""The report names what was recognized, where, and what could not be placed."""

from __future__ import annotations

import json

from tests.evidence.helpers import CASES, cli, load_text

PASTE = """\
Hi, our all-reduce is slow on two nodes. Here is the log:

node1:100:200 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>
node1:100:200 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>
node2:100:200 [0] NCCL INFO Using network IB
export NCCL_IB_HCA=mlx5_0
$ ibstat
CA 'mlx5_0'
\tCA type: MT4123
\tPort 1:
\t\tState: Active
\t\tRate: 200
\t\tLink layer: InfiniBand
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
   1073741824     268435456     float     sum      -1    47535   22.59   22.59      0    47743   22.49   22.49      0
# Avg bus bandwidth    : 20.1
Any idea what is wrong?
"""


def test_file_report(tmp_path):
    report = load_text(tmp_path, PASTE).report
    name = f"{tmp_path}/paste.txt"
    assert report["files"] == [{
        "file": name, "lines": 17, "bytes": len(PASTE), "recognized_lines": 15,
        "segments": [
            # the reporter's words: NCCL trouble (a slow all-reduce) at a scale (evidence/report_words.py)
            {"kind": "report_words", "lines": "1", "first": 1, "last": 1, "count": 1},
            {"kind": "nccl_log", "lines": "3-5", "first": 3, "last": 5, "count": 3},
            {"kind": "env", "lines": "6", "first": 6, "last": 6, "count": 1},
            {"kind": "command", "lines": "7", "first": 7, "last": 7, "count": 1},
            {"kind": "ibstat", "lines": "8-13", "first": 8, "last": 13, "count": 6},
            {"kind": "nccl_tests", "lines": "14-16", "first": 14, "last": 16, "count": 3},
        ],
        "segments_left_off": 0,
        "unplaced": {"count": 1, "examples": [{"line": f"{name}:17", "text": "Any idea what is wrong?"}]},
        "cut_lines": 0, "binary_lines": 0,
    }]
    assert report["recognized"] == {"command": 1, "env": 1, "ibstat": 6, "nccl_log": 3, "nccl_tests": 3,
                                    "report_words": 1}
    assert report["tool_outputs"] == [{"tool": "ibstat", "lines": f"{name}:8-13", "parsed": True}]
    assert report["facts"] == {
        "log.nccl": f"{name}:3-5", "log.env": f"{name}:6", "log.tests": f"{name}:14-16",
        "log.rdma": f"{name}:8-13", "log.host": "no such lines in the evidence",
        "log.job": f"{name}:3-6,8-16", "tools.ibstat": f"{name}:8-13",
        # the node facts the paste shows, as the probes make them (evidence/node_facts.py)
        "rdma.ports": f"{name}:8-13", "nccl.env": f"{name}:6"}


def test_facts_it_implies(tmp_path):
    obs = {o.fact: o.value for o in load_text(tmp_path, PASTE).observations}
    job = obs["log.job"]
    assert (job["scope"], job["fabric"], job["network"]) == ("inter", "ib", "IB")
    assert job["nics"] == {"per_node": 1, "basis": "nccl_log", "line_gbps": 200.0, "used": {"node1": ["mlx5_0:1"]}}
    assert job["bandwidth"] == {"measured_gbs": 22.59, "basis": "peak busbw at large sizes", "expected_gbs": 25.0,
                                "nics": 1, "line_gbps": 200.0, "ratio": 0.904, "verdict": "at_limit"}


def test_json_output_carries_the_report():
    proc = cli("diagnose", "--evidence", str(CASES / "case-006.txt"), "--format", "json")
    data = json.loads(proc.stdout)
    used = data["evidence_used"]
    assert used["files"][0]["segments"] == [{"kind": "nccl_log", "lines": "2-4", "first": 2, "last": 4, "count": 2}]
    assert used["facts"]["log.nccl"] == f"{CASES / 'case-006.txt'}:2,4"
    step = next(p for p in data["path"] if p["node"] == "nccl_log.libibverbs")
    assert step["outcome"] == "yes"
    row = next(r for r in data["evidence"] if r["node"] == "nccl_log.libibverbs" and r["fact"] == "log.nccl.errors")
    assert row["source"] == f"{CASES / 'case-006.txt'}:2,4"


def test_two_files_and_stdin(tmp_path):
    first = tmp_path / "a.txt"
    first.write_text("NCCL INFO Using network Socket\n")
    proc = cli("diagnose", "--evidence", str(first), "--evidence", "-", "--format", "json",
               stdin=b"export NCCL_IB_DISABLE=1\n")
    data = json.loads(proc.stdout)
    assert [f["file"] for f in data["evidence_used"]["files"]] == [str(first), "<stdin>"]
    assert data["evidence_used"]["facts"]["log.env"] == "<stdin>:1"


def test_unplaced_lines_shown_back_have_their_secrets_redacted(tmp_path):
    """Issue 15: a pasted hf_ token, a `--password X` and a secret-named variable in prose were echoed
    verbatim in the report's "unplaced lines" examples."""
    secrets = ["hf_abcdefghijklmnopqrstuvwxyzABCDEF12", "hunter2-topsecret", "s3cr3t-value-123"]
    text = (f"my token is {secrets[0]} please help\n"
            f"we launch with trainer --password {secrets[1]} on every node\n"
            f"WANDB_API_KEY={secrets[2]}\n"
            "h:1:2 [0] NCCL INFO Using network IB\n")
    report = load_text(tmp_path, text).report
    shown = json.dumps(report)
    assert report["files"][0]["unplaced"]["count"] >= 2
    assert not any(s in shown for s in secrets), shown
