"""Shapes (evidence/shapes.py): a log whose ranks print their own numbers costs what its bytes cost,
and the fast path still reads what the line path reads."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import load_evidence, nccl, segmenter, shapes
from allreduce_doctor.evidence.nccl_errors import FAIL_HINT_RE
from benchmarks import nccl_log_gen
from tests.evidence.test_streaming import KEYS

SPLIT = (b"INFO ncclCommSplit comm 0x5731d75ce0 rank 225 nranks 512 cudaDev 1 nvmlDev 1 busId 2a000 "
         b"parent 0x57317cc7e0 color 1 key 225 - Init START")
SPLIT_OTHER_RANK = (b"INFO ncclCommSplit comm 0x5e9f6fbee0 rank 231 nranks 512 cudaDev 7 nvmlDev 7 busId 2a000 "
                    b"parent 0x5e9f1529e0 color 7 key 231 - Init START")


def test_per_rank_fields_are_made_alike():
    assert shapes.shapes([SPLIT, SPLIT_OTHER_RANK, b"INFO NVLS comm 0x7f3a9c headRank 3 nHeads 8"]) == [
        b"INFO ncclCommSplit comm 0x rank 000 nranks 000 cudaDev 0 nvmlDev 0 busId 0a000 parent 0x color 0 key 000 "
        b"- Init START"] * 2 + [b"INFO NVLS comm 0x headRank 0 nHeads 0"]
    assert shapes.shapes([]) == []


def test_a_shape_keeps_the_words_that_classify_it():
    # the failure hints (bulk.py _may_fail) and the kept values are decided on one message of a shape
    words = [w.encode() for w in FAIL_HINT_RE.pattern.lower().split("|") if not any(c.isdigit() for c in w)]
    assert shapes.shapes(words) == words
    kept = [b"INFO Bootstrap : Using ib0:10.0.0.11<0>", b"INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.0.0.11<0>",
            b"INFO Using network IB", b"INFO NCCL_IB_GID_INDEX set by environment to 3", b"INFO 16 coll channels, 16 nvls",
            b"INFO transport/net.cc:1302 -> 6", b"INFO NCCL version 2.21.5+cuda12.4"]
    alike = [SPLIT, b"INFO CollNet 00/0 : 5 [send] via COLLNET/SHARP/3/GDRDMA", b"INFO rank 5 Connected CollNet",
             b"INFO Init timings - ncclCommSplit: rank 0 nranks 8 total 2.51 (kernels 0.13, topo 0.10)"]
    assert [shapes.is_value(k) for k in kept + alike] == [True] * len(kept) + [False] * len(alike)


@pytest.fixture(scope="module")
def job_log(tmp_path_factory):
    path = tmp_path_factory.mktemp("job") / "nccl.log"
    info = nccl_log_gen.write_log(path, 8)
    return path, info


def test_a_job_whose_ranks_print_their_own_numbers_is_read_shape_by_shape(job_log, monkeypatch):
    path, info = job_log
    read = []
    feed = nccl.NcclLog.feed_quiet
    monkeypatch.setattr(nccl.NcclLog, "feed_quiet", lambda self, text, where: read.append(where) or feed(self, text, where))
    facts = {o.fact: o.value for o in load_evidence([str(path)]).observations}
    # per host: its version, Bootstrap and NET/IB lines; per shape: one line (message by message, 2,269)
    assert len(read) < 600
    errors = facts["log.nccl"]["errors"]
    assert sorted(errors) == ["gid_change", "retry_exceeded"]
    assert errors["retry_exceeded"]["source"] == f"{path}:{info['error_line']}"  # the error buried at 85%
    assert errors["gid_change"]["source"] == f"{path}:{info['warn_line']}"
    job = facts["log.job"]
    assert (job["scope"], job["nodes"], job["ranks"], job["ranks_per_node"]) == ("inter", 512, 4096, 8)
    # connection lines come after a group's init lines: looked for at several places of each block
    assert facts["log.nccl"]["transports"] == ["NET/IB/0/GDRDMA", "NET/IB/7/GDRDMA", "P2P/CUMEM/read"]


def test_bulk_and_line_paths_agree_on_every_rank_failing(tmp_path, monkeypatch):
    path = tmp_path / "failing.log"
    nccl_log_gen.write_log(path, 5, version="2.23.4", warn_every=True)
    bulk = {o.fact: o.value for o in load_evidence([str(path)]).observations}
    monkeypatch.setattr(segmenter, "BULK_MIN", 10**12)
    exact = {o.fact: o.value for o in load_evidence([str(path)]).observations}
    for key in (*KEYS, "lines", "errors", "other_warnings"):
        assert bulk["log.nccl"][key] == exact["log.nccl"][key], key
    assert exact["log.nccl"]["errors"]["retry_exceeded"]["count"] > 64  # each rank's own completion error
    for key in ("scope", "nodes", "ranks", "ranks_per_node", "network", "fabric", "nics", "gdr"):
        assert bulk["log.job"][key] == exact["log.job"][key], key
