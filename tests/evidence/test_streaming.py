"""The bulk path (large all-NCCL blocks) says what the line-by-line path says; memory stays flat."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from allreduce_doctor.evidence import load_evidence, segmenter
from allreduce_doctor.evidence.reader import CHUNK
from benchmarks import evidence_stream
from tests.evidence.helpers import ROOT

KEYS = ("version", "network", "transports", "nranks", "nnodes", "local_ranks", "plugin", "gdr_messages", "hcas",
        "bootstrap", "oob", "hosts", "coll_channels")


# INFO lines that report failures or retries (nccl_errors.INFO_KINDS), and the rank that prints each.
REFUSED = "host-a:1:2 [0] NCCL INFO Call to connect returned Connection refused, retrying"
NO_DEVICE = "host-b:1:2 [1] NCCL INFO NET/IB : No device found."
NO_VERBS = "host-c:1:2 [2] NCCL INFO Failed to open libibverbs.so[.1]"
NO_PLUGIN = "host-d:1:2 [3] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object file"
PYTORCH_REMOTE = ("ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device "
                  "error. It can be also caused by unexpected exit of a remote peer, you can check NCCL warnings for "
                  "failure reason and see if there is connection closure by a peer.")
NCCL_VERSION = "host-a:1:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4"


def _plant(lines: list[str], index: int, text: str) -> None:
    """Put `text` on line `index`, padded to the old line's length so that no offset moves."""
    lines[index] = text.ljust(len(lines[index]) - 1) + "\n"


@pytest.fixture(scope="module")
def big_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("log") / "nccl.log"
    evidence_stream.write_log(path, 9)
    text = path.read_text().splitlines(keepends=True)
    # INFO failures at the start of the flood, the middle, the last line of the first 4 MiB block
    # and on the line that straddles the 4 MiB chunk boundary (the first line of the next block)
    offsets, at = [], 0
    for line in text:
        offsets.append(at)
        at += len(line)
    straddler = next(i for i, o in enumerate(offsets) if o + len(text[i]) > CHUNK)
    assert offsets[straddler] < CHUNK and offsets[straddler] + len(text[straddler]) > CHUNK
    first_nccl = next(i for i, line in enumerate(text) if " NCCL INFO " in line)
    middle = len(text) // 2
    for index, planted in ((first_nccl, REFUSED), (first_nccl + 1, NO_DEVICE), (middle - 10, REFUSED),
                           (middle - 9, NO_VERBS), (straddler - 1, REFUSED), (straddler, NO_PLUGIN),
                           (len(text) - 40, REFUSED.replace("host-a", "host-z"))):
        _plant(text, index, planted)
    # a few lines of other kinds in the middle of the NCCL flood: they must still be read
    text[middle:middle] = ["export NCCL_IB_QPS_PER_CONNECTION=4\n", "this line is prose\n",
                           "h:1:2 [0] misc/ibvwrap.cc:63 NCCL WARN NET/IB : Got completion with error 12, opcode 0\n",
                           # prose that names NCCL (PyTorch's words) is read as text, not skipped as an NCCL line
                           PYTORCH_REMOTE + "\n"]
    # rank 0 of a communicator quotes `NCCL ` twice: it must not hide one other line from the block's count
    text[middle + 100:middle + 100] = [NCCL_VERSION + "\n", "Segmentation fault (core dumped)\n"]
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
    assert bulk["log.nccl"]["errors"] == exact["log.nccl"]["errors"]
    assert bulk["log.nccl"]["other_warnings"] == exact["log.nccl"]["other_warnings"]
    errors = exact["log.nccl"]["errors"]
    # ib_async_event: the generator's `Got async event : port active` (a non-fatal event, read since dev6)
    # connect_retry: NCCL retries a refused connect (not a failure until its WARN says the retries ran out)
    assert sorted(errors) == ["connect_retry", "ib_async_event", "libibverbs_missing", "no_ib_device",
                              "plugin_failed", "remote_error", "retry_exceeded"]
    refused = errors["connect_retry"]
    assert (refused["count"], refused["hosts"], refused["source"]) == (4, ["host-a", "host-z"], f"{big_log}:4098")
    assert [(errors[k]["count"], errors[k]["hosts"]) for k in ("no_ib_device", "libibverbs_missing", "plugin_failed")] \
        == [(1, ["host-b"]), (1, ["host-c"]), (1, ["host-d"])]
    assert bulk["log.env"]["vars"] == exact["log.env"]["vars"] == {"NCCL_IB_QPS_PER_CONNECTION": "4"}
    assert bulk["log.tests"]["main"]["peak_busbw_large"] == exact["log.tests"]["main"]["peak_busbw_large"]
    for key in ("scope", "nodes", "ranks", "ranks_per_node", "network", "fabric", "nics", "bandwidth", "gdr"):
        assert bulk["log.job"][key] == exact["log.job"][key], key
    b, e = bulk_report["files"][0], exact_report["files"][0]
    assert (b["lines"], b["unplaced"]) == (e["lines"], e["unplaced"])
    assert b["unplaced"]["count"] == 2  # "this line is prose" and the segmentation fault


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
    # VmHWM: this image's own peak (ru_maxrss keeps the forking pytest worker's peak across exec)
    code = ("import sys\nfrom allreduce_doctor.evidence import load_evidence\n"
            "load_evidence([sys.argv[1]])\n"
            "print(next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1])\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env, check=True)
    assert int(out.stdout) < 150 * 1024
