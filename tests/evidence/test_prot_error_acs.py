"""A local protection error (IBV_WC_LOC_PROT_ERR, error 4) is ACS breaking GPUDirect RDMA until the switch
ports' ACSCtl says otherwise (NCCL 2.30 net_ib/common.h printIbWcStatusHint): with no lspci in the text the
runbook decided rdma_core_outdated with high confidence, because a bridge it had not read counted as one that
does not redirect. Missing is unknown: ACS now ranks first (medium), rdma-core second, each with its paste."""

from __future__ import annotations

from tests.evidence.helpers import OUTPUTS, diagnose_json, facts, fixture_body

ERROR_4 = ("node1:1234:1300 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
           "10.0.0.2<49189> with error 4, opcode 0, len 0, vendor err 81 (Send) localGid ::ffff:10.0.0.1\n")


def test_with_no_lspci_acs_is_unknown_not_off(tmp_path):
    assert facts(tmp_path, ERROR_4)["log.host"]["acs_redirect"] is None


def test_a_lone_local_protection_error_ranks_acs_then_rdma_core(tmp_path):
    rc, data, path = diagnose_json(tmp_path, ERROR_4)
    assert rc == 3 and data["verdict"] == "inconclusive"
    assert [(f["cause"], f["confidence"]) for f in data["findings"]] == [
        ("pcie_acs_enabled", "medium"), ("rdma_core_outdated", "low")]
    assert data["findings"][0]["supporting"][1] == (
        f"{path}:1: A local protection error is not ACS breaking GPUDirect RDMA -> unknown")
    assert data["findings"][0]["next_step"] == "paste `lspci -vvv | grep ACSCtl` of the node"


def test_with_the_switch_ports_acs_read_and_off_it_is_the_old_rdma_core(tmp_path):
    lspci = fixture_body(OUTPUTS / "lspci-vvv-pex890xx-switch-port-acs-off.txt")
    assert facts(tmp_path, ERROR_4 + lspci)["log.host"]["acs_redirect"] is False
    rc, data, _path = diagnose_json(tmp_path, ERROR_4 + lspci)
    assert rc == 1 and (data["root_cause"]["id"], data["root_cause"]["confidence"]) == ("rdma_core_outdated", "high")
