"""PyTorch's watchdog timeout (ProcessGroupNCCL WorkNCCL::checkTimeout): alone it is a hang whose
candidates are a collective that never completes; beside an RDMA failure it favours what both
explain."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_rc_json as _diagnose

P = "gpu-a:4242:4301 [0] "
# NCCL 2.29-2.30 src/transport/net_ib/p2p.cc: WARN "NET/IB: Got completion from peer %s with
# status=%s(%d) opcode=%s(%d) vendor_err=%u %s%s%s%s hca %s" (ibvWcStatusStr names the status).
RETRY_230 = (f"{P}transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<45123> with "
             "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  localGid ::ffff:10.0.0.1 "
             "remoteGids::ffff:10.0.0.2 hca mlx5_0\n")
# PyTorch ProcessGroupNCCL's watchdog (WorkNCCL::checkTimeout), as torchrun's per-rank prefix prints it.
WATCHDOG = ("[rank1]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [PG 0 Rank 1] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
            "for 600081 milliseconds before timing out.\n")


def test_a_lone_watchdog_timeout_is_a_hang_whose_candidates_are_a_collective_that_never_completes(tmp_path):
    rc, d = _diagnose(tmp_path, WATCHDOG)
    assert rc == 3 and d["verdict"] == "inconclusive"
    # dev5: ranked by how many setups each cause reaches, all low (a timeout says where, not why)
    assert [(f["cause"], f["confidence"]) for f in d["findings"]] == [
        ("fabric_unreachable", "low"), ("iommu_enabled", "low"), ("pcie_acs_enabled", "low")]
    assert d["findings"][0]["supporting"] == [f"{tmp_path / 'paste.txt'}:1: {WATCHDOG.strip()}"]


def test_beside_an_rdma_failure_the_watchdog_favours_what_both_explain_not_acs(tmp_path):
    # A frame or a timeout says where a rank waits, not why: the retry-exceeded completion's causes
    # rank, the one that also hangs (fabric_unreachable) first.
    rc, d = _diagnose(tmp_path, WATCHDOG + RETRY_230)
    assert [f["cause"] for f in d["findings"]] == ["fabric_unreachable", "wrong_gid_index", "mtu_mismatch"]
    assert len(d["findings"][0]["supporting"]) == 3
