"""The bulk path (large all-NCCL blocks) says what the line-by-line path says; memory stays flat."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from allreduce_doctor.evidence import load_evidence, segmenter
from benchmarks import evidence_stream
from tests.evidence.helpers import ROOT

KEYS = ("version", "network", "transports", "nranks", "nnodes", "local_ranks", "plugin", "gdr_messages", "hcas",
        "bootstrap", "oob", "hosts", "coll_channels")


@pytest.fixture(scope="module")
def big_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("log") / "nccl.log"
    evidence_stream.write_log(path, 9)
    text = path.read_text().splitlines(keepends=True)
    # a few lines of other kinds in the middle of the NCCL flood: they must still be read
    middle = len(text) // 2
    text[middle:middle] = ["export NCCL_IB_QPS_PER_CONNECTION=4\n", "this line is prose\n",
                           "h:1:2 [0] misc/ibvwrap.cc:63 NCCL WARN NET/IB : Got completion with error 12, opcode 0\n"]
    path.write_text("".join(text))
    return path


def _facts(path):
    result = load_evidence([str(path)])
    return {o.fact: o.value for o in result.observations}, result.report


def test_bulk_and_line_paths_agree(big_log, monkeypatch):
    bulk, bulk_report = _facts(big_log)
    monkeypatch.setattr(segmenter, "BULK_MIN", 10**12)
    exact, exact_report = _facts(big_log)
    for key in KEYS:
        assert bulk["log.nccl"][key] == exact["log.nccl"][key], key
    assert bulk["log.nccl"]["lines"] == exact["log.nccl"]["lines"]
    assert sorted(bulk["log.nccl"]["errors"]) == sorted(exact["log.nccl"]["errors"]) == ["retry_exceeded"]
    assert bulk["log.env"]["vars"] == exact["log.env"]["vars"] == {"NCCL_IB_QPS_PER_CONNECTION": "4"}
    assert bulk["log.tests"]["main"]["peak_busbw_large"] == exact["log.tests"]["main"]["peak_busbw_large"]
    for key in ("scope", "nodes", "ranks", "ranks_per_node", "network", "fabric", "nics", "bandwidth", "gdr"):
        assert bulk["log.job"][key] == exact["log.job"][key], key
    b, e = bulk_report["files"][0], exact_report["files"][0]
    assert (b["lines"], b["unplaced"]) == (e["lines"], e["unplaced"])
    assert b["unplaced"]["count"] == 1


def test_the_synthetic_job(big_log):
    f, _ = _facts(big_log)
    job = f["log.job"]
    assert (job["scope"], job["nodes"], job["ranks"], job["ranks_per_node"]) == ("inter", 512, 4096, 8)
    assert (job["network"], job["fabric"], job["gdr"]["state"]) == ("IB", "ib", "on")
    assert job["nics"]["per_node"] == 8 and job["nics"]["basis"] == "nccl_log"
    assert f["log.nccl"]["transports"] == sorted(["P2P/CUMEM/read"] + [f"NET/IB/{d}/GDRDMA" for d in range(8)])


def test_memory_stays_flat(tmp_path):
    """A 40 MB log read in a child process: its peak RSS stays far below the 150 MB target."""
    line = b"gpu-node-0001:41000:42000 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA\n"
    path = tmp_path / "big.log"
    with path.open("wb") as out:
        for _ in range(40):
            out.write(line * (1_000_000 // len(line) + 1))
    code = ("import resource, sys\nfrom allreduce_doctor.evidence import load_evidence\n"
            "load_evidence([sys.argv[1]])\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env, check=True)
    assert int(out.stdout) < 150 * 1024
