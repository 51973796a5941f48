"""An EFA job whose connections failed (issue 12, dev10): the job's connection facts count the EFA
device's unanswered-peer completions (aws-ofi-nccl `Request %p completed with error`, libfabric
`Unreachable remote`), and the IB/RoCE check "Every RDMA connection completes" neither decides nor
speaks against the EFA candidates (socket_blocked first, fabric_unreachable second: libfabric's
own reading of the status). A healthy EFA log stays without a connection failure."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json, facts

P = "ip-10-0-1-11:1234:1234 [0] NCCL INFO "
INIT = (f"{P}NCCL version 2.21.5+cuda12.4\n"
        f"{P}NET/OFI Initializing aws-ofi-nccl 1.9.1-aws\n"
        f"{P}NET/OFI Selected Provider is efa (found 4 nics)\n"
        f"{P}Using network AWS Libfabric\n"
        f"{P}Channel 00/0 : 0[0] -> 8[0] [send] via NET/AWS Libfabric/0/GDRDMA\n")
# aws-ofi-nccl nccl_ofi_rdma.c process_err_completion (v1.14.0) and platform-aws.cpp log_cq_error (v1.21.1) shapes.
UNREACHABLE_OLD = ("ip-10-0-1-11:1234:1260 [0] process_err_completion:1755 NCCL WARN NET/OFI Request 0x7f10a41c2b30 "
                   "completed with error. RC: 113. Error: 13 (Unresponsive remote (detected locally) My EFA addr: "
                   "fe80::4a1:eaff:fe16:29c7 Peer EFA addr: fe80::48d:22ff:fe77:3d01). Completed length: 0, Request: "
                   "{ dev: 0, size: 0, state: CREATED, type: SEND }\n")
UNREACHABLE_NEW = ("ip-10-0-1-11:1234:1260 [0] virtual void PlatformAWS::log_cq_error(void*, fid_cq*, fi_cq_err_entry*, "
                   "const char*):1047 NCCL WARN NET/OFI Request 0x7f2c1c0a5e00 (send) completed with error: err: 113, "
                   "flags: 0, prov_errno: 15, strerror: Unreachable remote - never received a response, len: 0\n")
NO_RESPONSE = ("ip-10-0-1-11:1234:1260 [0] ofi_process_cq:1039 NCCL WARN NET/OFI Request 0x7fbb944701b8 completed with "
               "error. RC: 20. Error: unknown error. Completed length: 0, Request: { buffer_index: 255, dev: 1, size: 0, "
               "state: CREATED, direction: SEND }\n")
HEALTHY = INIT + f"{P}comm 0x5566 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 10100 commId 0x1 - Init COMPLETE\n"


def _step(d: dict, title: str) -> dict:
    return next(s for s in d["path"] if s["title"] == title)


def test_an_efa_peer_that_never_answered_is_a_failed_connection_of_its_own_suspect(tmp_path):
    job = facts(tmp_path, INIT + UNREACHABLE_NEW)["log.job"]
    assert job["connections"] == {"failures": True, "counts": {"efa_remote_unreachable": 1},
                                  "cross_subnet": False, "suspect": "efa"}


def test_old_libfabrics_no_response_counts_too(tmp_path):
    job = facts(tmp_path, INIT + NO_RESPONSE)["log.job"]
    assert job["connections"]["counts"] == {"efa_no_response": 1} and job["connections"]["suspect"] == "efa"


def test_an_efa_failure_supports_both_efa_causes_and_no_check_speaks_against_them(tmp_path):
    for failure in (UNREACHABLE_OLD, UNREACHABLE_NEW, NO_RESPONSE):
        rc, d, path = diagnose_json(tmp_path, INIT + failure)
        assert rc == 3 and [(f["cause"], f["confidence"]) for f in d["findings"][:2]] == [
            ("socket_blocked", "medium"), ("fabric_unreachable", "low")]
        assert [f["contradicting"] for f in d["findings"][:2]] == [[], []]
        assert all(line.startswith(f"{path}:6: NET/OFI Request") for f in d["findings"][:2] for line in f["supporting"])
        step = _step(d, "Every RDMA connection completes")
        assert step["outcome"] == "no" and step["means"].startswith("no IB or RoCE connection failure")


def test_a_healthy_efa_log_has_no_connection_failure(tmp_path):
    job = facts(tmp_path, HEALTHY)["log.job"]
    assert job["connections"] == {"failures": False, "counts": {}, "cross_subnet": False, "suspect": ""}
    rc, d, _ = diagnose_json(tmp_path, HEALTHY)
    assert not {"socket_blocked", "fabric_unreachable"} & {f["cause"] for f in d["findings"]}


def test_a_verbs_failure_beside_an_efa_one_is_judged_as_before(tmp_path):
    # retry-exceeded of the IB transport with a full MTU and no GID in the text: the suspect stays unknown
    retry = ("ip-10-0-1-11:1234:1260 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
             "10.0.0.2<51234> with status=12 opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.0.0.1 "
             "remoteGids::ffff:10.0.0.2\n")
    job = facts(tmp_path, INIT + retry + UNREACHABLE_NEW)["log.job"]
    assert job["connections"]["counts"] == {"retry_exceeded": 1, "efa_remote_unreachable": 1}
    assert job["connections"]["suspect"] != "efa"
