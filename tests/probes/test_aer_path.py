"""Uncorrectable AER errors are judged on NCCL's path only: the GPUs, the RDMA NICs and the bridges
above them (drivers/pci/pcie/aer.c names the source in "error received: BDF")."""

from __future__ import annotations

from allreduce_doctor.observations import MISSING, Observation
from allreduce_doctor.parsers import parse
from allreduce_doctor.probes.derive_host import kernel_events
from tests.scenarios import nodes as N

LSPCI = [{"bdf": "0000:00:01.0", "secondary_bus": 0x16, "subordinate_bus": 0x1a, "kind": None},
         {"bdf": "0000:1a:00.0", "kind": "nic"}, {"bdf": "0000:19:00.0", "kind": "gpu"},
         {"bdf": "0000:c0:01.1", "secondary_bus": 0xc1, "subordinate_bus": 0xc1, "kind": None},
         {"bdf": "0000:c1:00.0", "kind": None}]


def events(dmesg: str, lspci: Observation | None = None) -> Observation:
    return kernel_events({"kernel.dmesg": Observation("kernel.dmesg", parse("dmesg_lines", dmesg)),
                          "pci.lspci": lspci or Observation("pci.lspci", LSPCI)})


def test_a_nic_behind_the_root_port_is_judged():
    obs = events(N.DMESG_AER_UNCORRECTED)
    assert (obs.value["aer_uncorrected"], obs.value["aer_elsewhere"]) == (2, 0)


def test_an_nvme_drive_is_shown_not_judged():
    obs = events(N.DMESG_AER_NVME)
    assert (obs.value["aer_uncorrected"], obs.value["aer_elsewhere"]) == (0, 2)
    assert obs.value["examples"][0].startswith("[ 5120.402118] pcieport 0000:c0:01.1: AER: Uncorrected")


def test_which_device_erred_is_unknown_without_lspci():
    obs = events(N.DMESG_AER_NVME, Observation("pci.lspci", None, MISSING, reason="lspci is not installed (not on PATH)"))
    assert obs.value["aer_uncorrected"] is None
    assert obs.reason == ("uncorrectable AER errors were logged, but whether their devices carry NCCL's traffic is "
                          "unknown: lspci -vvv was not read")


def test_no_aer_line_needs_no_lspci():
    obs = events("[    2.1] mlx5_core 0000:1a:00.0: firmware version: 28.41.1000\n",
                 Observation("pci.lspci", None, MISSING, reason="lspci is not installed (not on PATH)"))
    assert (obs.value["aer_uncorrected"], obs.reason) == (0, "")
