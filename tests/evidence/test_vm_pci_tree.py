"""`lspci -tv` trees (pciutils ls-tree.c): a GPU or RDMA NIC behind an emulated PCI bridge is a virtual
machine; GPUs under two roots name ACS and ATS first, under one root the hidden topology."""

from __future__ import annotations

import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse
from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import facts
from tests.evidence.helpers import ranked as _ranked

# -- lspci -tv: a GPU or RDMA NIC behind an emulated PCI bridge is a virtual machine -----------------
# Trees in pciutils ls-tree.c's drawing. Bare metal: a PCIe switch (its downstream ports are bridges at
# device numbers past 0), a dual-port NIC, SR-IOV virtual functions (ARI numbers them past device 0).
TREE_BARE = (
    "-+-[0000:00]-+-00.0  Advanced Micro Devices, Inc. [AMD] Starship/Matisse Root Complex\n"
    " |           +-01.1-[01-05]----00.0-[02-05]--+-00.0-[03]----00.0  NVIDIA Corporation GA100 [A100 SXM4 80GB]\n"
    " |           |                               +-04.0-[04]----00.0  Mellanox Technologies MT28908 Family [ConnectX-6]\n"
    " |           |                               \\-08.0-[05]--+-00.0  Mellanox Technologies MT28908 Family [ConnectX-6]\n"
    " |           |                                            \\-00.1  Mellanox Technologies MT28908 Family [ConnectX-6]\n"
    " |           \\-01.2-[06]--+-00.0  Mellanox Technologies MT28908 Family [ConnectX-6]\n"
    " |                        +-00.2  Mellanox Technologies MT28908 Family [ConnectX-6 Virtual Function]\n"
    " |                        \\-01.2  Mellanox Technologies MT28908 Family [ConnectX-6 Virtual Function]\n"
    " \\-[0000:40]-+-00.0  Advanced Micro Devices, Inc. [AMD] Starship/Matisse Root Complex\n"
    "             \\-03.1-[41]----00.0  NVIDIA Corporation GA100 [A100 SXM4 80GB]\n"
)
# A QEMU VM: GPUs and a VF at device numbers past 0 behind expander buses' bridges, under two roots.
TREE_VM = (
    "-+-[0000:00]-+-00.0  Intel Corporation 82G33/G31/P35/P31 Express DRAM Controller\n"
    " |           +-01.0  Red Hat, Inc. Virtio network device\n"
    " |           \\-1f.0  Intel Corporation 82801IB (ICH9) LPC Interface Controller\n"
    " +-[0000:d0]---00.0-[d1]--+-01.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
    " |                        +-02.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
    " |                        \\-03.0  Mellanox Technologies MT2910 Family [ConnectX-7 Virtual Function]\n"
    " \\-[0000:c0]---00.0-[c1]--+-01.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
    "                          \\-02.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
)
# A VM with every GPU behind one PCI bridge of one root bus (i440fx).
TREE_FLAT = (
    "-[0000:00]-+-00.0  Intel Corporation 440FX - 82441FX PMC [Natoma]\n"
    "           \\-1e.0-[01]--+-01.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
    "                        +-02.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
    "                        \\-03.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
)
# `lspci -t` without -v (no names), as a bare-metal host prints it.
TREE_NO_NAMES = (
    "-[0000:00]-+-00.0\n"
    "           +-01.1-[01]--+-00.0\n"
    "           |            \\-00.1\n"
    "           +-02.1-[04-10]----00.0-[05-10]--+-00.0-[06]----00.0\n"
    "           |                               +-02.0-[07]----00.0\n"
    "           |                               \\-0d.0-[10]----00.0\n"
    "           \\-08.3-[13]----00.0\n"
)


def test_the_tree_parser_reads_each_device_on_its_bus():
    devices = parse("lspci_tree", TREE_BARE)
    assert len(devices) == 17
    gpu = next(d for d in devices if d["bus"] == "03")
    assert gpu == {"domain": "0000", "bus": "03", "root": False, "slot": "00.0", "device": 0, "function": 0,
                   "name": "NVIDIA Corporation GA100 [A100 SXM4 80GB]", "bridge": None}
    switch = [(d["bus"], d["slot"], d["bridge"]) for d in devices if d["bus"] == "02"]
    assert switch == [("02", "00.0", "03"), ("02", "04.0", "04"), ("02", "08.0", "05")]
    assert [(d["bus"], d["slot"]) for d in devices if d["bus"] == "06"] == [("06", "00.0"), ("06", "00.2"), ("06", "01.2")]
    assert [(d["bus"], d["root"]) for d in devices if d["slot"] == "03.1"] == [("40", True)]
    no_names = parse("lspci_tree", TREE_NO_NAMES)
    assert [(d["bus"], d["slot"], d["bridge"]) for d in no_names][-4:] == [
        ("05", "0d.0", "10"), ("10", "00.0", None), ("00", "08.3", "13"), ("13", "00.0", None)]


def test_text_that_is_not_a_tree_is_one_parse_error():
    with pytest.raises(ParseError, match=r"^expected lspci -tv output"):
        parse("lspci_tree", "-[0000:00]-\n")


def _host(tmp_path, text: str) -> dict:
    return facts(tmp_path, text)["log.host"]["pcie_tree"]


def test_a_bare_metal_tree_shows_no_virtual_machine(tmp_path):
    for text in (TREE_BARE, TREE_NO_NAMES):
        tree = _host(tmp_path, text)
        assert tree["virtual"] is False and tree["behind_pci_bridge"] == [], text


def test_a_vm_tree_with_gpus_under_two_roots_names_acs_and_ats_first(tmp_path):
    rc, d, path = _diagnose(tmp_path, TREE_VM, "--symptom", "slow")
    assert rc == 3 and _ranked(d)[:2] == ["pcie_acs_enabled", "vm_topology_hidden"]
    assert d["findings"][0]["supporting"] == [
        f"{path}:1-8: d1:01.0 NVIDIA Corporation GH100 [H100 SXM5 80GB] at a device number other than 0 behind a "
        "bridge (a PCIe port links device 0 only): an emulated PCI bridge, a virtual machine"]
    assert d["findings"][0]["next_step"].endswith(  # one step for the tied pair (dev11): the VM's topology first
        "then `lspci -vvv` of the NICs and of the bridges above them on the host (ACSCtl, ATSCtl) and "
        "`mlxconfig -d DEV q ATS_ENABLED` decide pcie_acs_enabled")
    tree = _host(tmp_path, TREE_VM)
    assert tree["gpu_root_buses"] == 2 and len(tree["behind_pci_bridge"]) == 4  # the VF too: a VM's passthrough


def test_a_vm_tree_with_every_gpu_under_one_root_names_the_hidden_topology_first(tmp_path):
    _, d, _ = _diagnose(tmp_path, TREE_FLAT, "--symptom", "slow")
    assert _ranked(d)[:2] == ["vm_topology_hidden", "pcie_acs_enabled"]
