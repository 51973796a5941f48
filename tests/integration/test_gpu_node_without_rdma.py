"""A GPU node built without RDMA (a real one-GPU H200 VM, virtio-net only) is not told socket_fallback:
nothing there can carry RDMA, so there is no RDMA path to diagnose (exit 4). A node whose NIC can carry
RDMA but has no RDMA device still is (mlx5_core's "rdma" auxiliary device, linux mlx5/core/dev.c)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.hosts.empty import EmptyHost
from allreduce_doctor.observations import MISSING, OK, Observation
from allreduce_doctor.probes.builtins_net import pci_network
from allreduce_doctor.probes.derive_host import rdma_hardware

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
H200_VM = FIXTURES / "device" / "h200-vm-1gpu-no-rdma.tar.gz"
ONE_GPU_RUN = FIXTURES / "outputs" / "nccl-tests" / "nccl-tests-all_reduce_perf-1gpu-h200-nccl-2.28.9.txt"


def _run(capsys, *args: str) -> tuple[int, dict]:
    code = main(["diagnose", *args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_real_gpu_vm_without_rdma_hardware_has_nothing_to_diagnose(capsys):
    code, d = _run(capsys, "--snapshot", str(H200_VM))
    assert code == 4 and d["verdict"] == "not_applicable" and d["root_cause"] is None
    last = d["path"][-1]
    assert last["node"] == "trunk.rdma_hardware" and last["outcome"] == "no"
    assert "no NIC here can carry RDMA" in last["means"]


def test_a_one_gpu_run_on_a_node_without_hcas_names_no_rdma_cause(capsys):
    # `NET/IB : No device found.` is printed by every communicator's init; one rank never uses NET
    code, d = _run(capsys, "--evidence", str(ONE_GPU_RUN))
    assert code == 3 and d["verdict"] == "inconclusive" and d["root_cause"] is None
    assert not {f["cause"] for f in d["findings"]} & {"container_missing_ib_devices", "wrong_ib_hca", "socket_fallback"}


def _functions(*fns: dict) -> dict[str, Observation]:
    return {"pci.network_functions": Observation("pci.network_functions", list(fns), OK)}


@pytest.mark.parametrize("fn, present", [
    ({"bdf": "0000:17:00.0", "class": "0x020000", "vendor": "0x15b3", "driver": None}, True),  # mlx5_core not loaded
    ({"bdf": "0000:3b:00.0", "class": "0x020700", "vendor": "0x1077", "driver": None}, True),  # an InfiniBand controller
    ({"bdf": "0000:41:00.0", "class": "0x020000", "vendor": "0x14e4", "driver": "bnxt_en"}, True),  # bnxt_re not bound
    ({"bdf": "0000:01:00.0", "class": "0x020000", "vendor": "0x14e4", "driver": "tg3"}, False),  # no RDMA driver sits on tg3
    ({"bdf": "0000:00:03.0", "class": "0x020000", "vendor": "0x1af4", "driver": None}, False),  # virtio-net
    ({"bdf": "0000:02:00.0", "class": "0x020000", "vendor": "0x8086", "driver": None}, None),  # Intel, driver unread
])
def test_which_nic_can_carry_rdma(fn, present):
    assert rdma_hardware(_functions(fn)).value["present"] is present


def test_an_unreadable_pci_list_is_unknown_not_absent():
    obs = rdma_hardware({"pci.network_functions": Observation("pci.network_functions", None, MISSING, reason="not recorded")})
    assert obs.status == MISSING and obs.value is None


def test_an_empty_pci_listing_is_unknown_not_a_node_without_nics():
    # every node lists at least its host bridge: nothing listed is sysfs masked (a container), not no NIC
    obs = pci_network(EmptyHost())
    assert obs.status == MISSING and obs.value is None
    assert obs.reason == "/sys/bus/pci/devices lists no device (sysfs not mounted or masked)"
