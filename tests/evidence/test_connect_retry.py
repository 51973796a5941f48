"""A TCP connect NCCL retries (signatures.yaml connect_retry) is no failure: ranks start at different times,
so a peer not listening yet is expected at init. A healthy log with a retry and then Init COMPLETE on every
host must accuse nothing (it said "FAULT FOUND: socket_blocked", high confidence); the WARN NCCL prints when
the retries run out is still the failure it was."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json

HEALTHY_WITH_RETRY = """\
node-a:100:100 [0] NCCL INFO NCCL version 2.27.7+cuda12.9
node-a:100:100 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>
node-b:200:200 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.2<0>
node-b:200:210 [0] NCCL INFO ncclSocketStartConnect: connect to 10.0.0.1<45763> returned Connection refused, retrying (1/34) after sleep for 100 msec
node-a:100:100 [0] NCCL INFO Using network IB
node-a:100:120 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1 - Init COMPLETE
node-b:200:220 [0] NCCL INFO comm 0x56 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1 - Init COMPLETE
"""
RAN_OUT = HEALTHY_WITH_RETRY.replace(
    "node-a:100:120 [0] NCCL INFO comm 0x55", "node-b:200:210 [0] misc/socket.cc:582 NCCL WARN ncclSocketStartConnect: "
    "connect to 10.0.0.1<45763> returned Connection refused, exceeded error retry count after 35 attempts\n"
    "node-a:100:120 [0] NCCL INFO comm 0x55").replace(
    "node-b:200:220 [0] NCCL INFO comm 0x56 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1 - Init COMPLETE\n", "")


def test_a_retried_connect_in_a_healthy_log_accuses_nothing(tmp_path):
    rc, data, _ = diagnose_json(tmp_path, HEALTHY_WITH_RETRY)
    errors = next(e["observed"] for e in data["evidence"] if e["fact"] == "log.nccl.errors")
    assert rc == 3 and data["verdict"] == "inconclusive" and data["root_cause"] is None
    assert data["findings"] == [] and errors["connect_retry"]["blocking"] is False


def test_the_warn_after_the_last_retry_is_still_the_failure(tmp_path):
    rc, data, path = diagnose_json(tmp_path, RAN_OUT)
    assert rc == 1 and data["root_cause"]["id"] == "socket_blocked"
