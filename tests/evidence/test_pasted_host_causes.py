"""A pasted NCCL log with the host's own tool output: ACS, IOMMU and VM causes are the trunk's (issue 27 item 2).

nccl_log.yaml no longer judges ACS, the IOMMU or a VM's view by rules of its own: the pasted lspci -vvv,
/proc/cmdline, dmesg and nvidia-smi topo -m are the node's pci.lspci, kernel.cmdline, kernel.dmesg and gpu.topo,
and trunk.acs, trunk.iommu and trunk.vm_topology decide them. A paste that shows the host healthy on one of these
names no fault for it (a paste is never a healthy node: the rest stays unknown, so the verdict is inconclusive).
"""

from __future__ import annotations

import pytest

from tests.evidence.helpers import OUTPUTS, fixture_body
from tests.evidence.test_paste_from_bundle import SCENARIOS, diagnose_paste, paste_of

# what an engineer pastes of the job's NCCL_DEBUG=INFO output above the host's tool output
NCCL_LINES = """gpu01:12345:12345 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
gpu01:12345:12345 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.11<0>
gpu01:12345:12345 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.11<0>
gpu01:12345:12345 [0] NCCL INFO Using network IB
gpu01:12345:12400 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA
"""
# drivers/iommu/intel/dmar.c dmar_fault_do_one()'s line: the IOMMU translates the NIC's DMA
DMAR_FAULT = ("[ 8120.331402] DMAR: [DMA Read NO_PASID] Request device [1a:00.0] fault addr 0x7f3a2000 "
              "[fault reason 0x06] PTE Read access is not set\n")
TWINS = {"nccl_log.acs", "nccl_log.iommu", "nccl_log.vm"}


def _lspci(scenario: str) -> str:
    """The scenario bundle's lspci -vvv block, as pasted."""
    blocks = paste_of(SCENARIOS / scenario / "bundle.tar.gz").split("\n$ ")
    return "\n".join("$ " + b.removeprefix("$ ") for b in blocks if b.removeprefix("$ ").startswith("lspci"))


def _cmdline(mode: str, dmesg: str = "") -> str:
    return f"$ cat /proc/cmdline\nBOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=UUID=4f1c ro {mode} quiet\n$ dmesg\n{dmesg}"


def _vm_topo() -> str:
    """A VM's nvidia-smi topo -m (case-019's shape): GPUs only, every GPU-GPU path PHB, each GPU on both NUMA nodes."""
    names = [f"GPU{g}" for g in range(8)]
    rows = ["\t" + "\t".join(names + ["CPU Affinity", "NUMA Affinity"])]
    rows += ["\t".join([a, *(" X " if a == b else "PHB" for b in names), "0-191", "0-1"]) for a in names]
    return "$ nvidia-smi topo -m\n" + "\n".join(rows) + "\n"


FAULTS = {
    "acs": (lambda: _lspci("ib-acs-redirect"), "trunk.acs", "pcie_acs_enabled"),
    "iommu-fault": (lambda: _cmdline("intel_iommu=on", DMAR_FAULT), "trunk.iommu", "iommu_enabled"),
    "iommu-on": (lambda: _cmdline("intel_iommu=on"), "trunk.iommu", "iommu_enabled"),
    "vm": (_vm_topo, "trunk.vm_topology", "vm_topology_hidden"),
}
HEALTHY = {
    "acs-directtrans-ats": (lambda: _lspci("acs-directtrans-ats"), "trunk.acs"),
    "acs-healthy": (lambda: _lspci("ib-healthy"), "trunk.acs"),
    "iommu-pt": (lambda: _cmdline("intel_iommu=on iommu=pt", "[    0.512000] DMAR: IOMMU enabled\n"), "trunk.iommu"),
    "bare-metal": (lambda: "$ nvidia-smi topo -m\n" + fixture_body(OUTPUTS / "nvidia-smi-topo-m-h100-8gpu-8nic.txt"),
                   "trunk.vm_topology"),
}


def _outcomes(data: dict) -> dict[str, str]:
    return {p["node"]: p["outcome"] for p in data["path"]}


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_a_pasted_log_with_the_hosts_symptom_names_the_trunks_cause(name, tmp_path, capsys):
    text, step, cause = FAULTS[name]
    code, data = diagnose_paste(tmp_path, capsys, NCCL_LINES + text())
    outcomes = _outcomes(data)
    assert (code, data["verdict"], data["root_cause"]["id"], outcomes[step]) == (1, "fault", cause, "yes")
    assert [n for n, o in outcomes.items() if o == "yes"] == ["trunk.evidence", step]
    assert not TWINS & set(outcomes)


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_a_pasted_log_with_the_host_healthy_names_no_fault(name, tmp_path, capsys):
    text, step = HEALTHY[name]
    code, data = diagnose_paste(tmp_path, capsys, NCCL_LINES + text())
    outcomes = _outcomes(data)
    assert (code, data["verdict"], data["root_cause"], outcomes[step]) == (3, "inconclusive", None, "no")
    assert not TWINS & set(outcomes)
