"""The cause catalogue (../shared/CAUSES.md) as data: every leaf of a runbook names one of these.

The ids are a public contract (JSON output, ticket labels): add freely, never rename or drop.
`healthy` marks the two "no fault" outcomes, which only `healthy:` leaves may name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CauseInfo:
    id: str
    title: str  # "what is wrong", shortened to one line
    section: str  # the CAUSES.md section heading, short form
    healthy: bool = False


_SECTIONS: dict[str, list[tuple[str, str]]] = {
    "Transport selection": [
        ("socket_fallback", "NCCL moves inter-node data over TCP sockets instead of RDMA"),
        ("ib_disabled_by_env", "NCCL_IB_DISABLE=1 forces NCCL onto sockets"),
        ("container_missing_libibverbs", "the image lacks rdma-core / libibverbs or the mlx5 provider"),
        ("container_missing_ib_devices", "the container is not given /dev/infiniband, IPC_LOCK or memlock"),
        ("wrong_ib_hca", "NCCL_IB_HCA selects a wrong, down or slow port, or leaves rails out"),
        ("net_plugin_not_loaded", "the platform's external NCCL net plugin is not loaded"),
        ("rdma_core_outdated", "rdma-core in the container is older than NCCL expects"),
        ("asymmetric_transport", "one side uses IB while the other fell back to sockets"),
    ],
    "Bootstrap and socket interface": [
        ("wrong_socket_ifname", "NCCL's socket interface is loopback, a bridge or unreachable by peers"),
        ("container_network_isolation", "the container's own network namespace gives peers unroutable addresses"),
    ],
    "Host, PCIe and GPU topology": [
        ("gdr_disabled", "GPUDirect RDMA is not used: NIC traffic is staged through host memory"),
        ("pcie_acs_enabled", "PCIe ACS redirects peer-to-peer traffic to the root complex"),
        ("iommu_enabled", "the IOMMU translates peer DMA on bare metal"),
        ("pcie_link_degraded", "a NIC or GPU trained below its PCIe speed or width"),
        ("numa_affinity", "NCCL's proxy threads or NIC are on the wrong NUMA node for the GPU"),
        ("vm_topology_hidden", "the VM flattens the PCIe/NUMA topology, so NCCL builds poor paths"),
        ("p2p_disabled_by_env", "a leftover setting forbids intra-node P2P/NVLink"),
        ("nvlink_degraded", "NVLink links are inactive or erroring"),
        ("fabric_manager_not_ready", "Fabric Manager is not running or not finished on an NVSwitch system"),
        ("nccl_tuning_override", "forced NCCL tuning variables strangle bandwidth"),
        ("too_few_channels", "NCCL builds fewer channels than the NICs need"),
    ],
    "InfiniBand branch": [
        ("ib_port_down", "a compute port is not ACTIVE"),
        ("ib_no_subnet_manager", "the port is stuck in INIT: no subnet manager configured it"),
        ("link_degraded", "a port trained below its rated speed or width"),
        ("link_errors", "a physical link is erroring: bad cable, optic or connector"),
        ("ib_congestion", "credit backpressure: the fabric is congested but lossless"),
        ("ib_xmit_discards", "packets are discarded at a port on a lossless fabric"),
        ("mtu_mismatch", "path or endpoint MTUs disagree, or the active MTU is too low"),
    ],
    "RoCE v2 branch": [
        ("wrong_gid_index", "NCCL uses a GID that does not route (link-local, RoCE v1 or absent)"),
        ("gid_index_drift", "the GID table differs between nodes or over time, so a pinned index is wrong"),
        ("pfc_not_enabled", "PFC is not enabled on the RoCE priority: the fabric is lossy"),
        ("traffic_class_mismatch", "RoCE traffic is marked into a priority that is not lossless"),
        ("ecn_disabled", "ECN/DCQCN is off, so senders never slow down before PFC fires"),
        ("roce_packet_loss", "packets are lost and go-back-N retransmission collapses throughput"),
        ("pfc_pause_storm", "a PFC pause cascade: pauses rise fleet-wide, nothing drops, all is slow"),
        ("roce_congestion", "DCQCN working as designed under heavy congestion"),
        ("cross_rail_unreachable", "NCCL connects across rails on a rail-isolated fabric"),
        ("fabric_unreachable", "some NIC pairs cannot reach each other at all"),
    ],
    "Across the fleet": [
        ("setting_mismatch", "a setting differs on a minority of nodes"),
        ("straggler_node", "one node is measurably slower or noisier than its peers"),
    ],
    "No fault": [
        ("expected_hardware_limit", "the measured bandwidth already matches what the hardware can deliver"),
        ("no_fault_found", "every check passed: nothing found on this node"),
    ],
}

_HEALTHY = {"expected_hardware_limit", "no_fault_found"}

CAUSES: dict[str, CauseInfo] = {
    cause_id: CauseInfo(cause_id, title, section, cause_id in _HEALTHY)
    for section, rows in _SECTIONS.items()
    for cause_id, title in rows
}

FAULT_IDS: frozenset[str] = frozenset(c for c, info in CAUSES.items() if not info.healthy)
HEALTHY_IDS: frozenset[str] = frozenset(c for c, info in CAUSES.items() if info.healthy)
