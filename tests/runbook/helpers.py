"""Shared helpers for the runbook engine tests (facts catalogue, observation builders)."""

from __future__ import annotations

from pathlib import Path

from allreduce_doctor.observations import Observation, Observations

DATA = Path(__file__).parent / "data"
FACTS = frozenset(
    {
        "rdma.ports", "rdma.gids", "nccl.env", "gpu.gdr", "roce.nccl_ports", "net.qos", "net.ecn",
        "counters.roce", "counters.ib", "net.ipv4_forwarding", "pcie.link2",
    }
)


def observations(**facts) -> Observations:
    """observations(rdma_ports=[...]) -> Observations; a value that is an Observation is kept as is.

    Underscores in the keyword become dots up to the first one only when the dotted name is a
    known fact (rdma_ports -> rdma.ports; net_ipv4_forwarding -> net.ipv4_forwarding).
    """
    obs = Observations()
    for name, value in facts.items():
        fact = next(f for f in FACTS if f.replace(".", "_") == name)
        obs.add(value if isinstance(value, Observation) else Observation(fact, value, source=f"probe:{fact}"))
    return obs


def healthy_roce(**overrides) -> Observations:
    """A RoCE node on which every check of the example set passes."""
    facts = dict(
        rdma_ports=[{"name": "mlx5_0/1", "link_layer": "Ethernet", "state": "ACTIVE", "rate_gbps": 400}],
        nccl_env={"NCCL_IB_GID_INDEX": "3"},
        gpu_gdr={"enabled": True},
        rdma_gids=[
            {"port": "mlx5_0/1", "index": 0, "kind": "link_local"},
            {"port": "mlx5_0/1", "index": 3, "kind": "roce_v2_ipv4"},
        ],
        roce_nccl_ports=["mlx5_0/1"],
        net_qos=[{"if": "eth0", "pfc_enabled": [3]}],
        net_ecn=[{"if": "eth0", "roce_np": True, "roce_rp": True}],
        counters_roce=[{"port": "mlx5_0/1", "rate": {"out_of_sequence": 0}}],
    )
    facts.update(overrides)
    return observations(**facts)


def healthy_ib(**overrides) -> Observations:
    facts = dict(
        rdma_ports=[{"name": "mlx5_0/1", "link_layer": "InfiniBand", "state": "ACTIVE", "rate_gbps": 400}],
        nccl_env={},
        gpu_gdr={"enabled": True},
        counters_ib=[{"port": "mlx5_0/1", "rate": {"symbol_error": 0}}],
    )
    facts.update(overrides)
    return observations(**facts)
