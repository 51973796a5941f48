"""The ceiling's topology from every source (issue 28, item 1): a bundle's sysfs and lspci (each rail NIC's PCIe
link, GPUDirect), pasted `lspci -vvv` and `nvidia-smi -q`, and NCCL's INFO lines (`0 nvls channels`).

The bundles are the scenario models (tests/scenarios/build.py): 8x H100 SXM, 8x ConnectX-7 NDR. The NIC in a Gen4
slot (pcie-gen5-nic-gen4-slot) carries 31.5 GB/s each way by design (PCI-SIG Gen4 x16), below the port's 50: the
node's ceiling is 8 x 31.5 = 252 GB/s. The same NIC trained at Gen4 in a Gen5 slot is a fault, not the ceiling."""

from __future__ import annotations

import pytest

from allreduce_doctor.busbw_ceiling import HOLD_BACK, NVLS_OFF
from allreduce_doctor.ceiling_node import ASK_NIC_PCIE
from tests.evidence.helpers import OUTPUTS, ROOT, diagnose_json, fixture_body
from tests.scenarios.expected import diagnose

SHARP = (OUTPUTS / "nccl-tests" / "nccl-tests-all_reduce_perf-64gpu-h100-ib-sharp.txt").read_text()
LSPCI_GEN5 = fixture_body(OUTPUTS / "lspci-vvv-mlx5-cx7-gen5-x16-ok.txt")
QUARTER = fixture_body(ROOT / "tests" / "fixtures" / "ceiling" /
                       "nccl-tests-all_reduce_perf-8gpu-h100-sxm-quarter-of-nvlink.txt")
NICS = ("--answer", "nics_per_node=8", "--answer", "nic_rate_gbps=400")
PCIE_FROM = "the rails' PCIe links (sysfs, lspci)"


@pytest.mark.parametrize(("bundle", "hardware", "ceiling", "cause"), [
    ("pcie-gen5-nic-gen4-slot", "at_limit", 252.0, None),  # the slot's Gen4 is the ceiling
    ("pcie-gen5-nic-gen4-in-gen5-slot", "below", 400.0, "pcie_link_degraded"),  # trained low: a fault
    ("ib-healthy", "below", 400.0, None),
])
def test_a_bundle_gives_each_rail_nics_pcie_link(bundle, hardware, ceiling, cause):
    d = diagnose(bundle, {"measured_busbw": "240"})
    bw = d["bandwidth"]
    assert (bw["hardware"], bw["ceiling"]["ceiling_gbs"], bw["ceiling"]["nic_pcie_from"]) == (hardware, ceiling, PCIE_FROM)
    assert (d.get("root_cause") or {}).get("id") == cause
    assert ASK_NIC_PCIE not in bw["ceiling"]["asks"] and bw["ceiling"]["asks"] == []  # GPUs per node read too


def test_the_gen4_slot_is_named_as_what_caps_the_nics():
    bw = diagnose("pcie-gen5-nic-gen4-slot", {"measured_busbw": "240"})["bandwidth"]
    assert bw["hardware_note"] == ("NICs: 240 of about 252 GB/s across nodes (8 NICs per node x 400 Gb/s ports each "
                                   "capped by their PCIe Gen4 x16 link (31.5 GB/s each way)): at the hardware's "
                                   "limit, not a fault")


def test_a_node_without_gpudirect_is_host_staging():
    bw = diagnose("dmabuf-disabled-no-peermem", {"measured_busbw": "300"})["bandwidth"]
    assert (bw["limit"], bw["ceiling"]["gdr"]) == ("NICs (host staging)", False)


def test_an_answer_overrides_the_nodes_pcie_link():
    bw = diagnose("ib-healthy", {"measured_busbw": "240", "nic_pcie_gen": "4"})["bandwidth"]
    assert (bw["hardware"], bw["ceiling"]["ceiling_gbs"], bw["ceiling"]["nic_pcie_from"]) == (
        "at_limit", 252.0, "--answer nic_pcie_gen")


def test_a_pasted_lspci_gives_the_nics_pcie_link(tmp_path):
    gen4 = LSPCI_GEN5.replace("Speed 32GT/s", "Speed 16GT/s")
    _rc, d, _ = diagnose_json(tmp_path, SHARP + "\n" + gen4, *NICS)
    c = d["bandwidth"]["ceiling"]
    assert (c["ceiling_gbs"], c["nic_pcie_from"]) == (252.0, "the NICs' PCIe links (sysfs, lspci)")
    _rc, d, _ = diagnose_json(tmp_path, SHARP + "\n" + LSPCI_GEN5, *NICS)
    assert d["bandwidth"]["ceiling"]["ceiling_gbs"] == 400.0  # Gen5 x16 (63 GB/s) carries a 400G port


def test_without_a_pcie_link_the_ceiling_asks_for_it(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, SHARP, *NICS)
    assert d["bandwidth"]["ceiling"]["nic_pcie_from"] is None and ASK_NIC_PCIE in d["bandwidth"]["ceiling"]["asks"]


def test_a_pasted_nvidia_smi_q_names_the_gpu_model(tmp_path):
    smi = fixture_body(OUTPUTS / "nvidia-smi-q-h100-sxm-fabric-completed.txt")
    _rc, d, _ = diagnose_json(tmp_path, SHARP + "\n" + smi, *NICS)
    c = d["bandwidth"]["ceiling"]
    assert (c["gpu_model"], c["model_from"]) == ("H100-SXM", "the GPUs' names")
    _rc, d, _ = diagnose_json(tmp_path, SHARP, *NICS)
    assert d["bandwidth"]["ceiling"]["gpu_model"] is None


HOST = "jo-dau5moatnhdynmy6-worker-0"  # the table's own host: one host, one run
NCCL_INFO = (f"{HOST}:313:313 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
             f"{HOST}:313:313 [0] NCCL INFO NVLS multicast support is not available on dev 0\n"
             f"{HOST}:313:313 [0] NCCL INFO 32 coll channels, 32 collnet channels, {{n}} nvls channels, "
             "32 p2p channels, 32 p2p channels per peer\n")


def test_the_logs_nvls_channels_say_whether_nvls_ran(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, NCCL_INFO.format(n=0) + QUARTER)
    bw = d["bandwidth"]
    assert bw["ceiling"]["nvls_used"] is False
    assert bw["note"].endswith(f"; NVLS is not in use (the log's `0 nvls channels`: {NVLS_OFF}); what can hold "
                               f"NVLink (NVLS) back: {HOLD_BACK}")
    _rc, d, _ = diagnose_json(tmp_path, NCCL_INFO.format(n=16) + QUARTER)
    assert d["bandwidth"]["ceiling"]["nvls_used"] is True and "NVLS is not in use" not in d["bandwidth"]["note"]
    _rc, d, _ = diagnose_json(tmp_path, QUARTER)
    assert d["bandwidth"]["ceiling"]["nvls_used"] is None


def test_the_channels_line_of_nccl_2_17_to_2_19_has_no_collnet_count(tmp_path):
    from tests.evidence.helpers import facts

    old = "h:1:1 [0] NCCL INFO 24 coll channels, 0 nvls channels, 32 p2p channels, 2 p2p channels per peer\n"
    nccl = facts(tmp_path, old)["log.nccl"]
    assert (nccl["coll_channels"], nccl["nvls_channels"]) == ([24], [0])
