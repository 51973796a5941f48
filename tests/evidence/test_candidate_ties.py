"""Honest ties (issue 12, dev11): when the first candidates of the ranked differential share the best score, the
text does not tell them apart, so none is more likely than the other: they get the same confidence (the lower,
low) and the one next step that tells them apart. One test per shape the scoring produces: a gap's pair (a slow
job whose log never names its network; a VM's PCI tree), an open question's two leaves (a hung intra-node test),
two signature kinds' equal sums; a hang on one host with nothing failing stays as it was."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json

P = "gpu-a:4242:4301 [0] "
VERSION_ONLY = f"{P}NCCL INFO NCCL version 2.21.5+cuda12.4\n"
# `lspci -tv` inside a VM: GPUs at device numbers other than 0 behind emulated bridges, under two root buses.
VM_TREE = (
    "-+-[0000:00]-+-00.0  Intel Corporation 82G33/G31/P35/P31 Express DRAM Controller\n"
    " |           \\-1f.0  Intel Corporation 82801IB (ICH9) LPC Interface Controller\n"
    " +-[0000:b0]---00.0-[b1]--+-01.0  NVIDIA Corporation GA100 [A100 SXM4 80GB]\n"
    " |                        \\-02.0  Mellanox Technologies MT28908 Family [ConnectX-6 Virtual Function]\n"
    " \\-[0000:a0]---00.0-[a1]--+-01.0  NVIDIA Corporation GA100 [A100 SXM4 80GB]\n"
    "                          \\-02.0  NVIDIA Corporation GA100 [A100 SXM4 80GB]\n"
)
# nccl-tests on one host that printed its header and ranks, then nothing (hung before the first size).
HUNG_ONE_HOST_TEST = (
    "# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
    "validation: 1 graph: 0\n#\n# Using devices\n"
    "#  Rank  0 Group  0 Pid  30412 on   gpu-a device  0 [0x3b] NVIDIA L40S\n"
    "#  Rank  1 Group  0 Pid  30412 on   gpu-a device  1 [0x5e] NVIDIA L40S\n#\n")
# NCCL 2.x net_ib.cc: the async GID table event, then a retry-exceeded completion.
GID_EVENT_AND_RETRY = (
    f"{P}transport/net_ib.cc:73 NCCL WARN NET/IB : Got async event : GID table change\n"
    "gpu-a:4242:4350 [0] transport/net_ib.cc:816 NCCL WARN NET/IB : Got completion with error 12, opcode 0, "
    "len 32633, vendor err 129\n"
    "gpu-a:4242:4350 [0] NCCL INFO include/net.h:28 -> 2\n"
    "gpu-a:4242:4350 [0] NCCL INFO transport/net.cc:295 -> 2\n")
# Every rank on one host, NCCL connected over P2P, nothing failed: the reporter says it hangs.
INTRA_RUNNING = (
    "gpu-a:5100:5100 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n"
    "gpu-a:5100:5180 [0] NCCL INFO comm 0x55d0c0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 3b000 commId 0x1f2e3d4c "
    "- Init START\n"
    "gpu-a:5101:5181 [1] NCCL INFO comm 0x55d0c8 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 5e000 commId 0x1f2e3d4c "
    "- Init START\n"
    "gpu-a:5100:5180 [0] NCCL INFO Channel 00/02 :    0   1\n"
    "gpu-a:5100:5180 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n")


def _ranked(data: dict) -> list[tuple[str, str]]:
    return [(f["cause"], f["confidence"]) for f in data["findings"]]


def _reasons(data: dict) -> list[str]:
    return [i["reason"] for i in data["inconclusive"] if i["node"] == "evidence"]


def test_a_slow_job_whose_log_never_names_its_network_ties_sockets_and_gdr_with_one_paste(tmp_path):
    _rc, d, _path = diagnose_json(tmp_path, VERSION_ONLY, "--symptom", "slow")
    step = ("paste NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET of one rank: `Using network Socket` (or `NET/IB : No "
            "device found`) is socket_fallback; `Using network IB` and `NET/IB : Using` with no `via NET/IB/N/GDRDMA` "
            "in the channel lines is gdr_disabled")
    assert _ranked(d) == [("socket_fallback", "low"), ("gdr_disabled", "low")]
    assert [f["next_step"] for f in d["findings"]] == [step, step]
    assert d["root_cause"]["confidence"] == "low"
    assert _reasons(d) == [f"the text suggests socket_fallback or gdr_disabled and does not tell them apart: {step}"]


def test_a_vms_pci_tree_ties_acs_and_the_hidden_topology_and_asks_for_the_vms_topology(tmp_path):
    _rc, d, _path = diagnose_json(tmp_path, VM_TREE, "--symptom", "slow")
    assert _ranked(d)[:2] == [("pcie_acs_enabled", "low"), ("vm_topology_hidden", "low")]  # ACS first: two roots
    first, second = d["findings"][:2]
    assert first["next_step"] == second["next_step"] == (
        "paste `nvidia-smi topo -m` inside the VM: every GPU-NIC pair at PHB is vm_topology_hidden (and the job's "
        "NCCL_TOPO_FILE); pairs at PIX or PXB show the real switches: then `lspci -vvv` of the NICs and of the bridges "
        "above them on the host (ACSCtl, ATSCtl) and `mlxconfig -d DEV q ATS_ENABLED` decide pcie_acs_enabled")


def test_an_open_question_between_the_iommu_and_acs_gives_both_the_same_confidence(tmp_path):
    # The hung test leaves `The kernel command line leaves the IOMMU out of peer DMA` open: its two leaves tie.
    step = ("decide 'The kernel command line leaves the IOMMU out of peer DMA': kernel.cmdline is missing: no node "
            "was read (diagnosing pasted evidence only): paste `cat /proc/cmdline`")
    for symptom in ((), ("--symptom", "hang")):  # a hang favours both alike: it was medium for the first
        _rc, d, _path = diagnose_json(tmp_path, HUNG_ONE_HOST_TEST, *symptom)
        assert _ranked(d) == [("iommu_enabled", "low"), ("pcie_acs_enabled", "low")], symptom
        assert [f["next_step"] for f in d["findings"]] == [step, step]
        assert _reasons(d) == [f"the text suggests iommu_enabled or pcie_acs_enabled and does not tell them apart: "
                               f"{step}"]


def test_two_kinds_with_equal_sums_name_each_ones_paste(tmp_path):
    # With a hang the GID event's drift and the retry-exceeded completion's wrong index score alike.
    _rc, d, _path = diagnose_json(tmp_path, GID_EVENT_AND_RETRY, "--symptom", "hang")
    assert _ranked(d)[:2] == [("gid_index_drift", "low"), ("wrong_gid_index", "low")]
    step = ("paste `show_gids` of the node now and after the next address change (DHCP, bond failover) "
            "(gid_index_drift); paste `show_gids` of both hosts and the job's NCCL_IB_GID_INDEX (wrong_gid_index)")
    assert [f["next_step"] for f in d["findings"][:2]] == [step, step]
    assert d["findings"][2]["next_step"] == "run `ib_write_bw -d DEV -x GID_INDEX` between the two hosts named in the error"


def test_without_a_tie_the_first_keeps_medium_and_its_own_step(tmp_path):
    _rc, d, _path = diagnose_json(tmp_path, GID_EVENT_AND_RETRY)  # no symptom: the wrong index leads alone
    assert _ranked(d)[0] == ("wrong_gid_index", "medium")
    assert d["findings"][0]["next_step"] == "paste `show_gids` of both hosts and the job's NCCL_IB_GID_INDEX"
    assert _reasons(d) == ["the text suggests wrong_gid_index but does not decide it: paste `show_gids` of both hosts "
                           "and the job's NCCL_IB_GID_INDEX"]


def test_a_hang_on_one_host_with_nothing_failing_keeps_its_pair_as_it_was(tmp_path):
    # No line points at either (the basis is that nothing failed): both low from the start, each with its own paste.
    _rc, d, _path = diagnose_json(tmp_path, INTRA_RUNNING, "--symptom", "hang")
    assert _ranked(d) == [("pcie_acs_enabled", "low"), ("iommu_enabled", "low")]
    assert d["findings"][1]["next_step"] == "paste `cat /proc/cmdline` and `dmesg | grep -i -e DMAR -e AMD-Vi`"
    assert _reasons(d)[0].startswith("the text suggests pcie_acs_enabled but does not decide it: paste `lspci -vvv")
