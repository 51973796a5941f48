"""What one node contributes to the fleet comparison, read from its observations.

A node record holds
  settings  node-wide values: {key: value}
  ports     per-port values: {key: {port or netdev: value}}
  env       the job's NCCL_* variables: {name: value} (absent when no job was found)
  numbers   node-wide figures for outliers: {metric: float}
  ceiling   the node's measured busbw against what its hardware carries (job.ceiling: hardware, ceiling_gbs,
            limit), so a node below its peers is named a straggler only when it is below its own ceiling too
  checks    (added by fleet/analyze.node_result) the runbooks' own loss and pause checks on this
            node's counters, which the fleet patterns read (runbook/load_checks.py)

Only facts whose observation is ok count: a node that could not read a setting is left out of
that setting's comparison, never counted as agreeing. Keys are listed in SETTINGS (order is the
report's order) with their title and the owner of the fix.
"""

from __future__ import annotations

from typing import Any

from allreduce_doctor.observations import Observations

# key -> (title, owner of the fix)
SETTINGS: dict[str, tuple[str, str]] = {
    "fabric": ("fabric", "host"),
    "pfc_priorities": ("PFC-enabled priorities", "network"),
    "trust": ("QoS trust mode", "network"),
    "dscp_map": ("DSCP to priority map", "network"),
    "ecn_np_priorities": ("ECN notification point (roce_np) priorities", "network"),
    "ecn_rp_priorities": ("ECN reaction point (roce_rp) priorities", "network"),
    "netdev_mtu": ("netdev MTU", "network"),
    "active_mtu": ("RDMA active MTU", "network"),
    "link_rate": ("link rate (Gb/s)", "network"),
    "port_state": ("port state", "network"),
    "roce_v2_ipv4_gid_index": ("index of the RoCE v2 IPv4 GID", "platform"),
    "nccl_env": ("NCCL environment of the job", "platform"),
    "iommu": ("IOMMU mode (kernel command line)", "host"),
    "acs_redirect": ("PCIe bridges with ACS redirect", "host"),
    "peermem": ("GPUDirect RDMA module (nvidia_peermem)", "host"),
    "nic_pcie": ("NIC PCIe link", "host"),
    "firmware": ("HCA firmware", "host"),
    "kernel": ("kernel release", "host"),
}
# metric -> (title, the bad direction)
METRICS: dict[str, tuple[str, str]] = {
    "link_rate_gbps": ("slowest port's link rate (Gb/s)", "low"),
    "pause_rate": ("PFC pause frames per second (busiest port)", "high"),
    "pause_tx_rate": ("PFC pause frames sent per second (busiest port)", "high"),
    "loss_rate": ("lost or retransmitted packets per second", "high"),
    "cnp_rate": ("congestion notification packets per second", "high"),
    "phy_error_rate": ("Ethernet PHY errors per second", "high"),
    "xmit_wait_rate": ("InfiniBand port_xmit_wait ticks per second (busiest port)", "high"),
    "ib_error_rate": ("InfiniBand error counters per second", "high"),
    "busbw_gbs": ("measured all-reduce busbw (GB/s)", "low"),
}
IB_ERRORS = ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors", "local_link_integrity_errors",
             "port_xmit_discards", "excessive_buffer_overrun_errors", "port_rcv_remote_physical_errors")


def _value(obs: Observations, fact: str) -> Any:
    found = obs.get(fact)
    return found.value if found.ok else None


def _per(rows: list[dict], pick, name: str = "name") -> dict[str, Any]:
    out = {}
    for row in rows:
        value = pick(row)
        if value is not None and row.get(name) is not None:
            out[str(row[name])] = value
    return out


def _enabled(row: dict) -> list[int]:
    return sorted(int(k) for k, v in row.items() if str(k).isdigit() and v == 1)


def dscp_ranges(mapping: dict) -> str | None:
    """{'0': 0, ..., '63': 7} as '0-7:0 8-15:1 ...' (DSCP ranges and their priority)."""
    try:
        pairs = sorted((int(k), int(v)) for k, v in mapping.items())
    except (TypeError, ValueError, AttributeError):
        return None
    runs: list[list[int]] = []
    for dscp, prio in pairs:
        if runs and runs[-1][1] == dscp - 1 and runs[-1][2] == prio:
            runs[-1][1] = dscp
        else:
            runs.append([dscp, dscp, prio])
    return " ".join(f"{a}-{b}:{p}" if a != b else f"{a}:{p}" for a, b, p in runs)


def _iommu(cmdline: Any) -> str | None:
    if not isinstance(cmdline, dict):
        return None
    args = cmdline.get("args") or {}
    set_ = [f"{k}={args[k]}" if args[k] is not True else k for k in ("intel_iommu", "amd_iommu", "iommu") if k in args]
    return " ".join(set_) or "not set"


def _acs(rows: list[dict]) -> list[str] | None:
    if not rows or all(r.get("access_denied") for r in rows):
        return None
    return sorted(str(r.get("bdf")) for r in rows if r.get("acs_redirect"))


def _gid_indexes(obs: Observations, roce_ports: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {port: None for port in roce_ports}
    for gid in obs.rows("rdma.gids"):
        port, index = gid.get("port"), gid.get("index")
        if port in roce_ports and gid.get("version") == 2 and gid.get("kind") == "ipv4" and isinstance(index, int):
            out[port] = index if out[port] is None else min(out[port], index)
    return out if _value(obs, "rdma.gids") is not None else {}


def _rate(row: dict, *names: str) -> float | None:
    interval = row.get("interval")
    values: list[Any] = [row.get(n) for n in names]
    if not isinstance(interval, (int, float)) or interval <= 0 or any(not isinstance(v, (int, float)) for v in values):
        return None
    return sum(values) / interval


def _numbers(obs: Observations, ports: list[dict]) -> dict[str, float]:
    numbers: dict[str, float] = {}
    rates: list[Any] = [p.get("rate_gbps") for p in ports if isinstance(p.get("rate_gbps"), (int, float))]
    if rates:
        numbers["link_rate_gbps"] = float(min(rates))
    roce = obs.rows("roce.counters")
    for metric, fields, combine in (("pause_rate", ("pause_rx", "pause_tx"), max), ("pause_tx_rate", ("pause_tx",), max),
                                    ("loss_rate", ("rdma_loss", "eth_loss"), sum), ("cnp_rate", ("cnp",), sum),
                                    ("phy_error_rate", ("phy_errors",), sum)):
        values = [v for r in roce if (v := _rate(r, *fields)) is not None]
        if values:
            numbers[metric] = round(float(combine(values)), 3)
    ib = [r for r in obs.rows("rdma.counters") if isinstance(r.get("rate"), dict)]
    # a rate that is null (saturated) or a counter missing from one sample is unknown, not 0
    waits = [r["rate"].get("port_xmit_wait") for r in ib]
    if ib and all(isinstance(w, (int, float)) for w in waits):
        numbers["xmit_wait_rate"] = round(float(max(waits)), 3)
    errors = [r["rate"].get(c) for r in ib for c in IB_ERRORS if c in r["rate"] or c in (r.get("absent") or ())]
    if ib and all(isinstance(e, (int, float)) for e in errors):
        numbers["ib_error_rate"] = round(float(sum(errors)), 3)
    return numbers


def node_record(obs: Observations, kernel: str | None) -> dict:
    """The node's settings, per-port settings, NCCL environment and numbers (see above)."""
    ports = obs.rows("rdma.compute_ports")
    qos = obs.rows("net.qos")
    fabric = _value(obs, "node.fabric") or {}
    settings = {
        "fabric": fabric.get("fabric"),
        "kernel": kernel or None,
        "iommu": _iommu(_value(obs, "kernel.cmdline")),
        "acs_redirect": _acs(obs.rows("pci.lspci")),
        "peermem": _value(obs, "gpu.peermem"),
    }
    roce_ports = {str(p["name"]) for p in ports if p.get("link_layer") == "Ethernet" and p.get("name")}
    port_values = {
        "pfc_priorities": _per(qos, lambda r: r.get("pfc_enabled")),
        "trust": _per(qos, lambda r: r.get("trust")),
        "dscp_map": _per(qos, lambda r: dscp_ranges(r["dscp2prio"]) if isinstance(r.get("dscp2prio"), dict) else None),
        "ecn_np_priorities": _per(obs.rows("net.ecn_np"), _enabled),
        "ecn_rp_priorities": _per(obs.rows("net.ecn_rp"), _enabled),
        "netdev_mtu": _per(obs.rows("net.ifaces"), lambda r: r.get("mtu")),
        "active_mtu": _per(ports, lambda r: r.get("active_mtu")),
        "link_rate": _per(ports, lambda r: r.get("rate_gbps")),
        "port_state": _per(ports, lambda r: (r.get("state") or {}).get("name")),
        "roce_v2_ipv4_gid_index": _gid_indexes(obs, roce_ports),
        "nic_pcie": _per(obs.rows("pci.nics"), _pcie),
        "firmware": _per(ports, lambda r: r.get("fw_ver")),
    }
    env = _value(obs, "nccl.env") or {}
    numbers = _numbers(obs, ports)
    ceiling = _value(obs, "job.ceiling") or {}
    if isinstance(ceiling.get("measured_gbs"), (int, float)) and ceiling.get("scope"):  # a judged table of its own
        numbers["busbw_gbs"] = float(ceiling["measured_gbs"])
    return {
        "ceiling": {k: ceiling.get(k) for k in ("hardware", "ceiling_gbs", "limit")} if "busbw_gbs" in numbers else None,
        "settings": {k: v for k, v in settings.items() if v is not None},
        "ports": {k: v for k, v in port_values.items() if v},
        "env": {k: v for k, v in (env.get("vars") or {}).items() if k.startswith("NCCL_")} if env.get("job_found") else None,
        "numbers": numbers,
    }


def _pcie(row: dict) -> str | None:
    speed, width = row.get("current_speed_gts"), row.get("current_width")
    return f"{speed:g}GT/s x{width}" if isinstance(speed, (int, float)) and isinstance(width, int) else None
