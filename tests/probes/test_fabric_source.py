"""The fabric comes from what NCCL uses, never from a vote one port's state can flip (review FA-10):
NCCL_IB_HCA's ports, else the log's NET/IB Using ports, else the NICs nearest the GPUs, else the link
layer most ports have, down ones included; the value and the reason say which."""

from __future__ import annotations

from allreduce_doctor.observations import MISSING, OK, Observation
from allreduce_doctor.probes.derive import node_fabric


def _port(dev: str, layer: str, state: str = "ACTIVE") -> dict:
    return {"device": dev, "port": "1", "name": f"{dev}/1", "link_layer": layer, "state": {"name": state}}


# A GB200 tray with rail mlx5_1 down: 3 active IB ports against 4 active Ethernet (BlueField-3) ones.
TRAY = [_port("mlx5_0", "InfiniBand"), _port("mlx5_1", "InfiniBand", "DOWN"), _port("mlx5_2", "InfiniBand"),
        _port("mlx5_3", "InfiniBand")] + [_port(f"mlx5_{i}", "Ethernet") for i in range(4, 8)]


def _inputs(env: dict | None = None, log: dict | None = None, topo: dict | None = None) -> dict:
    missing = Observation("", None, MISSING, reason="not read")
    return {"rdma.ports": Observation("", TRAY, OK),
            "nccl.env": Observation("", {"vars": env or {}}, OK) if env is not None else missing,
            "log.nccl": Observation("", log, OK) if log else missing,
            "gpu.topo": Observation("", topo, OK) if topo else missing,
            "nccl.version": Observation("", {"version": "2.27.7"}, OK)}


def test_nccl_ib_hca_decides_the_fabric():
    obs = node_fabric(_inputs(env={"NCCL_IB_HCA": "=mlx5_0,mlx5_1,mlx5_2,mlx5_3"}))
    assert obs.value["fabric"] == "ib" and obs.reason == "fabric from NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3"


def test_the_logs_using_line_decides_when_no_list_is_set():
    obs = node_fabric(_inputs(env={}, log={"hcas": {"host": ["mlx5_4:1", "mlx5_5:1"]}}))
    assert obs.value["fabric"] == "roce" and obs.value["from"] == "NCCL's NET/IB : Using lines"


def test_the_nics_nearest_the_gpus_decide_next():
    topo = {"matrix": {"GPU0": {"NIC0": "PIX", "NIC4": "SYS"}}, "nic_legend": {"NIC0": "mlx5_0", "NIC4": "mlx5_4"}}
    obs = node_fabric(_inputs(topo=topo))
    assert obs.value["fabric"] == "ib" and obs.value["from"] == "the NICs nearest the GPUs (nvidia-smi topo -m)"


def test_a_port_going_down_does_not_flip_the_count():
    """Only then the count: every port, down ones included (4 IB against 4 Ethernet: the tie is IB's)."""
    obs = node_fabric(_inputs())
    assert (obs.value["fabric"], obs.value["ib_ports"], obs.value["eth_ports"]) == ("ib", 3, 4)
    assert obs.reason == "fabric from the link layer most RDMA ports have"


def test_a_list_taking_both_link_layers_falls_through():
    obs = node_fabric(_inputs(env={"NCCL_IB_HCA": "mlx5"}, log={"hcas": {"h": ["mlx5_4:1"]}}))
    assert obs.value["from"] == "NCCL's NET/IB : Using lines"
