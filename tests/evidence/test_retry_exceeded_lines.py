"""The IB transport's retry-exceeded completions as NCCL 2.30 and perftest print them: read as one
kind, not CUDA P2P, and RNR retries are their own kind."""

from __future__ import annotations

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_rc_json as _diagnose
from tests.evidence.helpers import facts
from tests.evidence.helpers import ranked as _ranked

P = "node-a:4242:4301 [3] "


# -- NCCL 2.29+ completions: `Got CQE with error`, then the status by name ---------------------------
# transport/net_ib/p2p.cc (v2.29.7-1, v2.30.7-1): ncclIbTest warns `Got CQE with error (...)` and
# ncclIbLogCompletionWithError prints `status=IBV_WC_RETRY_EXC_ERR(12) ... vendor_err=N`.
CQE_230 = (f"{P}NCCL INFO NCCL version 2.30.7+cuda12.9\n"
           f"{P}transport/net_ib/p2p.cc:854 NCCL WARN NET/IB: Got CQE with error (devIndex=0, req=0x7f2a4c0, "
           "comm=0x7f2a3e0 (send), wr_id=140123, qp_num=4711)\n"
           f"{P}transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<45123> with "
           "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RDMA_WRITE(1) vendor_err=129  localGid ::ffff:10.0.0.1 "
           "remoteGids::ffff:10.0.0.2 hca mlx5_0\n")


def test_a_2_30_retry_exceeded_completion_is_read_as_one_and_not_as_cuda_p2p(tmp_path):
    errors = facts(tmp_path, CQE_230)["log.nccl"]["errors"]
    assert sorted(errors) == ["completion_error", "retry_exceeded"]  # the file name p2p.cc is not CUDA P2P
    assert errors["retry_exceeded"]["details"] == [{"peer": "10.0.0.2", "local_gid": "::ffff:10.0.0.1",
                                                    "remote_gid": "::ffff:10.0.0.2", "vendor_err": 129}]
    _, d = _diagnose(tmp_path, CQE_230)
    assert _ranked(d) == ["wrong_gid_index", "fabric_unreachable", "mtu_mismatch"]


def test_a_2_30_resiliency_line_of_the_ib_transport_is_not_cuda_p2p():
    line = ("transport/net_ib/p2p_resiliency.cc:312 NCCL WARN NET/IB: Could not find a replacement QP for the "
            "failed QP with qpIndex=1 (devIndex=0)")
    assert signatures.match(line).kind == "ib_device_failed"  # the 2.30 resiliency row (dev6), not cuda_p2p
    assert signatures.match("transport/p2p.cc:221 NCCL WARN P2P IPC handle open failed : invalid argument").kind \
        == "cuda_p2p"


def test_rnr_retry_exceeded_is_not_the_transport_retry_exceeded():
    # rdma-core ibv_wc_status_str: 12 "transport retry counter exceeded", 13 "RNR retry counter exceeded".
    assert signatures.match("ib_write_bw: transport retry counter exceeded").kind == "retry_exceeded"
    assert signatures.match("completion status: RNR retry counter exceeded") is None
    assert signatures.match("NET/IB: Got completion from peer 10.0.0.2<1> with status=IBV_WC_RNR_RETRY_EXC_ERR(13) "
                            "opcode=IBV_WC_SEND(0) vendor_err=136  hca mlx5_0").kind == "completion_error"


# -- perftest between the two hosts: the same completion status, the same QP setup ----------------------
# linux-rdma/perftest src/perftest_resources.h NOTIFY_COMP_ERROR_SEND (4.4-0.8..v4.5-0.20).
def test_an_ib_write_bw_retry_exceeded_has_the_candidates_of_nccls(tmp_path):
    text = " Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\nscnt=128, ccnt=0\n"
    assert list(facts(tmp_path, text)["log.nccl"]["errors"]) == ["retry_exceeded"]
    _, d = _diagnose(tmp_path, text)
    assert _ranked(d) == ["wrong_gid_index", "mtu_mismatch", "fabric_unreachable"]
    assert signatures.match(" Failed status 5: wr_id 0 syndrom 0xf9") is None  # a flush says nothing alone
