"""numa_lost_rails: without NCCL_IB_HCA or a PIX/PXB NIC (a GB200 tray), a down port of the compute
model is a rail when its NUMA node's GPUs outnumber that node's active ports of the model (NCCL
takes every ACTIVE port, src/transport/net_ib.cc ncclIbInit, and gives each GPU a NIC of its own CPU)."""

from __future__ import annotations

from allreduce_doctor.observations import MISSING, OK, Observation
from allreduce_doctor.probes.derive_numa import _id_list, numa_lost_rails

GPU_AFFINITY = {"GPU0": "0,3-9,11-17", "GPU1": "0,3-9,11-17", "GPU2": "1,19-25,27-33", "GPU3": "1,19-25,27-33"}


def _port(i: int, state: str = "ACTIVE") -> dict:
    return {"name": f"mlx5_{i}/1", "pci_bdf": f"0000:0{i}:00.0", "state": {"name": state}}


def _inputs(numa: dict[int, int], affinity=None) -> dict:
    topo = Observation("gpu.topo", {"numa_affinity": GPU_AFFINITY if affinity is None else affinity}, OK)
    nics = Observation("pci.nics", [{"name": f"0000:0{i}:00.0", "numa_node": n} for i, n in numa.items()], OK)
    return {"gpu.topo": topo, "pci.nics": nics}


TRAY = {0: 0, 1: 0, 2: 1, 3: 1}  # two ConnectX-7 per Grace


def test_a_down_port_whose_node_has_fewer_active_ports_than_gpus_is_a_lost_rail():
    ports = [_port(0), _port(1, "DOWN"), _port(2), _port(3)]
    assert numa_lost_rails(_inputs(TRAY), ports) == {"mlx5_1/1"}


def test_a_surplus_down_port_stays_undecided():
    # a fifth port of the model on Grace 0, down: its node still has an active port per GPU
    ports = [_port(0), _port(1), _port(2), _port(3), _port(4, "DOWN")]
    assert numa_lost_rails(_inputs({**TRAY, 4: 0}), ports) == set()


def test_without_the_affinity_or_the_nics_numa_node_nothing_is_decided():
    ports = [_port(0), _port(1, "DOWN"), _port(2), _port(3)]
    assert numa_lost_rails(_inputs(TRAY, affinity={g: "N/A" for g in GPU_AFFINITY}), ports) == set()
    unread = dict(_inputs(TRAY), **{"pci.nics": Observation("pci.nics", None, MISSING)})
    assert numa_lost_rails(unread, ports) == set()
    assert numa_lost_rails({}, ports) == set()


def test_the_kernel_list_format():
    assert _id_list("0,3-9,11-12") == {0, 3, 4, 5, 6, 7, 8, 9, 11, 12}
    assert _id_list("1") == {1}
    assert _id_list("N/A") is None and _id_list("2-x") is None
