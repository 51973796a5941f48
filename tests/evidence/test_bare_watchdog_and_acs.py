"""A bare watchdog timeout names no cause above low and asks for every rank's lines; beside redirecting
ACS lines ACS ranks first; iommu=pt alone names no ACS fault."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import ranked as _ranked

# -- a bare watchdog timeout: no cause above low, and the paste that tells them apart ----------------
WATCHDOG = ("[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [PG 0 Rank 0] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=131072000, NumelOut=131072000, "
            "Timeout(ms)=600000) ran for 600081 milliseconds before timing out.\n")


def test_a_bare_watchdog_timeout_names_no_topology_cause_first_and_asks_for_every_ranks_lines(tmp_path):
    rc, d, _ = _diagnose(tmp_path, WATCHDOG)
    assert [(f["cause"], f["confidence"]) for f in d["findings"]] == [
        ("fabric_unreachable", "low"), ("iommu_enabled", "low"), ("pcie_acs_enabled", "low")]
    assert all(f["contradicting"] == [] for f in d["findings"])  # the timeout is no line a check reads against
    assert d["findings"][0]["next_step"].startswith(
        "paste the NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET output of every rank")
    assert "TORCH_NCCL_DESYNC_DEBUG=1" in d["findings"][0]["next_step"]


def test_the_watchdog_beside_redirecting_acs_lines_ranks_acs_first(tmp_path):
    acs = ("$ sudo lspci -vvv | grep ACSCtl\n"
           "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n")
    _, d, _ = _diagnose(tmp_path, WATCHDOG + acs)
    assert [(f["cause"], f["confidence"]) for f in d["findings"]][0] == ("pcie_acs_enabled", "medium")


# -- the sweep: a command line with iommu=pt alone names no ACS fault (runbooks/nccl_log.yaml hang_acs) --
def test_iommu_passthrough_alone_names_no_acs_fault(tmp_path):
    _, d, _ = _diagnose(tmp_path, "node1:1:2 [0] NCCL INFO Using network Socket\n$ cat /proc/cmdline\n"
                                  "BOOT_IMAGE=/vmlinuz root=/dev/sda1 iommu=pt\n")
    assert "pcie_acs_enabled" not in _ranked(d)
