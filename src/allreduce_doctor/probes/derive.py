"""Derived facts: combine raw observations into the values the runbooks reason about.

Each derivation takes {fact: Observation} and returns an Observation. A derivation whose
essential input is not ok is itself not ok (missing evidence never turns into "healthy").
"""

from __future__ import annotations

from collections import Counter
from typing import Callable

from allreduce_doctor.domain import rated_gbps
from allreduce_doctor.observations import MISSING, NOT_APPLICABLE, OK, Observation
from allreduce_doctor.probes import derive_counters, derive_host, derive_job, derive_roce
from allreduce_doctor.probes.derive_job import _prefix_filter
from allreduce_doctor.probes.derive_job import blocked_input as _blocked

Inputs = dict[str, Observation]


def _active(port: dict) -> bool:
    return (port.get("state") or {}).get("name") == "ACTIVE"


def node_fabric(inputs: Inputs) -> Observation:
    """'ib' or 'roce' from the link layer of most active RDMA ports; 'none' without RDMA."""
    obs = inputs["rdma.ports"]
    if obs.status == NOT_APPLICABLE or (obs.status == OK and not obs.value):
        return Observation("", {"fabric": "none", "ib_ports": 0, "eth_ports": 0}, OK, reason="no RDMA devices")
    if (blocked := _blocked(inputs, "rdma.ports")) is not None:
        return blocked
    ports = obs.value
    counted = Counter(p.get("link_layer") for p in ports if _active(p)) or Counter(p.get("link_layer") for p in ports)
    ib, eth = counted.get("InfiniBand", 0), counted.get("Ethernet", 0)
    fabric = "ib" if ib >= eth and ib else "roce" if eth else "none"
    return Observation("", {"fabric": fabric, "ib_ports": ib, "eth_ports": eth}, OK)


def nccl_env(inputs: Inputs) -> Observation:
    """The NCCL environment the job sees: config files, overridden by the processes' env."""
    variables: dict[str, str] = {}
    origin: dict[str, str] = {}
    for fact in ("nccl.conf_system", "nccl.conf_user"):
        conf = inputs[fact]
        if conf.status == OK and isinstance(conf.value, dict):
            for name, value in conf.value.items():
                variables[name], origin[name] = str(value), conf.source
    procs = inputs["nccl.processes"]
    plist = procs.value if procs.status == OK and isinstance(procs.value, list) else []
    seen: dict[str, Counter] = {}
    for proc in plist:
        for name, value in (proc.get("env") or {}).items():
            seen.setdefault(name, Counter())[value] += 1
    conflicts = {}
    for name, values in seen.items():
        value, _ = values.most_common(1)[0]
        variables[name], origin[name] = value, "job environment"
        if len(values) > 1:
            conflicts[name] = sorted(values)
    job = bool(plist)
    value = {"vars": dict(sorted(variables.items())), "origin": origin, "job_found": job,
             "processes": len(plist), "conflicts": conflicts}
    if procs.status != OK:
        return Observation("", value, MISSING, reason=f"job processes not readable: {procs.reason}")
    return Observation("", value, OK, reason="" if job else "no running NCCL job found on this node")


def _log_rails(inputs: Inputs) -> set[str] | None:
    """'dev/port' names from NCCL's own `NET/IB : Using [0]mlx5_0:1/IB ...` lines, when a log is given."""
    log = inputs.get("log.nccl")
    if log is None or log.status != OK or not isinstance(log.value, dict):
        return None
    names = {n.replace(":", "/") for hcas in (log.value.get("hcas") or {}).values() for n in hcas}
    return names or None


def compute_ports(inputs: Inputs) -> Observation:
    """The RDMA ports NCCL uses (its log's list, NCCL_IB_HCA, else the GPUs' PIX/PXB NICs), each
    with the rate it should run at: its peers', the declared one, and its adapter's rating."""
    if (blocked := _blocked(inputs, "rdma.ports", "node.fabric")) is not None:
        return blocked
    fabric = inputs["node.fabric"].value["fabric"]
    layer = {"ib": "InfiniBand", "roce": "Ethernet"}.get(fabric)
    env = inputs["nccl.env"].value or {} if inputs["nccl.env"].status == OK else {}
    hca = (env.get("vars") or {}).get("NCCL_IB_HCA", "")
    ports = [dict(p) for p in inputs["rdma.ports"].value if p.get("link_layer") == layer]
    everything = list(ports)
    from_log = _log_rails(inputs)
    devices, why = derive_job.rail_devices(inputs, ports)
    if from_log is not None and {p["name"] for p in ports} & from_log:
        ports, source, known = [p for p in ports if p["name"] in from_log], "NCCL's NET/IB : Using lines", True
    elif hca:
        selected = _prefix_filter(hca)
        ports, source, known = [p for p in ports if selected(str(p.get("device")), str(p.get("port")))], \
            f"NCCL_IB_HCA={hca}", True
    elif devices is not None:
        ports, source, known = [p for p in ports if p.get("device") in devices], why, True
    else:
        # Nothing says which ports are the rails: guess the most common model; a port that is
        # down may then be a storage port, so its state is unknown rather than a fault.
        names = derive_job.model_rails(ports)
        ports, source, known = [p for p in ports if p["name"] in names], f"the most common HCA model ({why})", False
    names = {p["name"] for p in ports}
    not_rails = [f"{p['name']} ({derive_job._state_name(p)})" for p in everything if p["name"] not in names]
    policy = inputs["site.policy"].value or {} if inputs["site.policy"].status == OK else {}
    declared_gbps = policy.get("link_gbps")
    # Expected rate: the best rate among active peers of the same HCA type (never hard-coded).
    best: dict = {}
    for p in ports:
        rate = p.get("rate") or {}
        if _active(p) and isinstance(rate.get("gbps"), (int, float)):
            key = p.get("hca_type")
            if rate["gbps"] > best.get(key, (0, 0))[0]:
                best[key] = (rate["gbps"], rate.get("width"))
    ifaces = _records(inputs.get("net.ifaces"))
    mtus = _active_mtus(inputs.get("tools.ibv_devinfo"))
    for p in ports:
        iface = ifaces.get(p.get("netdev")) or {}
        p["mtu"], p["operstate"] = iface.get("mtu"), iface.get("operstate")
        p["active_mtu"], p["max_mtu"] = mtus.get(p["name"], (None, None))
        rate = p.get("rate") or {}
        exp_rate, exp_width = best.get(p.get("hca_type"), (None, None))
        p["expected_gbps"], p["expected_width"] = exp_rate, exp_width
        p["rate_gbps"], p["width"] = rate.get("gbps"), rate.get("width")
        p["rated_gbps"], p["declared_gbps"], p["rail"] = rated_gbps(p.get("hca_type")), declared_gbps, known or None
        p["degraded"] = _degraded(p)
    reason = f"rails from {source}" + (f"; not rails: {', '.join(not_rails)}" if not_rails else "")
    if not ports:
        return Observation("", [], NOT_APPLICABLE, reason=f"no {layer or 'RDMA'} ports ({reason})")
    return Observation("", ports, OK, reason=reason)


def _degraded(p: dict) -> bool | None:
    """Below its peers or the declared rate: degraded. Below only its adapter's rating: unknown,
    since one model is sold at several rates (domain.MODEL_MAX_GBPS); declare link_gbps to decide."""
    gbps = p["rate_gbps"]
    if not _active(p) or gbps is None:
        return False
    if (p["expected_gbps"] and gbps < p["expected_gbps"]) or (p["declared_gbps"] and gbps < p["declared_gbps"]):
        return True
    if p["rated_gbps"] and gbps < p["rated_gbps"] and not p["declared_gbps"]:
        return None
    return False


def _records(obs: Observation | None) -> dict[str, dict]:
    """Per-instance records of a fan-out fact by name ({} when the fact is not ok)."""
    if obs is None or obs.status != OK or not isinstance(obs.value, list):
        return {}
    return {r.get("name"): r for r in obs.value if isinstance(r, dict)}


def _active_mtus(obs: Observation | None) -> dict[str, tuple]:
    """'dev/port' -> (active_mtu, max_mtu) from ibv_devinfo -v, when it ran."""
    if obs is None or obs.status != OK or not isinstance(obs.value, dict):
        return {}
    out = {}
    for dev, info in (obs.value.get("devices") or {}).items():
        for port, pinfo in (info.get("ports") or {}).items():
            out[f"{dev}/{port}"] = (pinfo.get("active_mtu"), pinfo.get("max_mtu"))
    return out


    return Observation("", out, OK)


DERIVATIONS: dict[str, Callable[[Inputs], Observation]] = {
    "node_fabric": node_fabric,
    "nccl_env": nccl_env,
    "compute_ports": compute_ports,
}
DERIVATIONS.update(derive_job.DERIVATIONS)  # the job/topology derivations
DERIVATIONS.update(derive_roce.DERIVATIONS)  # GID choice, QoS and NCCL's priority
DERIVATIONS.update(derive_counters.DERIVATIONS)  # what the counters say (IB and RoCE)
DERIVATIONS.update(derive_host.DERIVATIONS)  # the job's RDMA userspace, the kernel log
