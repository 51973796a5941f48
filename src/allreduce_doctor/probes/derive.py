"""Derived facts: combine raw observations into the values the runbooks reason about.

Each derivation takes {fact: Observation} and returns an Observation. A derivation whose
essential input is not ok is itself not ok (missing evidence never turns into "healthy").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from allreduce_doctor.observations import MISSING, NOT_APPLICABLE, OK, Observation
from allreduce_doctor.probes import (
    derive_ceiling,
    derive_counters,
    derive_gdr,
    derive_host,
    derive_job,
    derive_linkcap,
    derive_numa,
    derive_peer,
    derive_plugin,
    derive_roce,
    derive_topo,
    pci_path,
)
from allreduce_doctor.probes.derive_job import _job_version, _prefix_filter
from allreduce_doctor.probes.derive_job import blocked_input as _blocked

Inputs = dict[str, Observation]


def _active(port: dict) -> bool:
    return (port.get("state") or {}).get("name") == "ACTIVE"


_LAYER_FABRIC = {"InfiniBand": "ib", "Ethernet": "roce"}


def node_fabric(inputs: Inputs) -> Observation:
    """'ib' or 'roce': the link layer of the ports NCCL uses, never a vote the state of a port can
    flip (a DGX GB200 tray has 4 ConnectX-7 IB ports and 2 dual-port BlueField-3 Ethernet, DGX GB200
    user guide; one IB rail down must not make it RoCE). In order: the ports NCCL_IB_HCA selects,
    the ports of NCCL's `NET/IB : Using` line, the NICs nearest the GPUs (nvidia-smi topo -m), else
    the link layer most ports have, down ones included (a port's link layer does not change when it
    goes down). 'none' without RDMA."""
    obs = inputs["rdma.ports"]
    if obs.status == NOT_APPLICABLE or (obs.status == OK and not obs.value):
        return Observation("", {"fabric": "none", "ib_ports": 0, "eth_ports": 0}, OK, reason="no RDMA devices")
    if (blocked := _blocked(inputs, "rdma.ports")) is not None:
        return blocked
    ports = obs.value
    counted = Counter(p.get("link_layer") for p in ports if _active(p))
    ib, eth = counted.get("InfiniBand", 0), counted.get("Ethernet", 0)
    value = {"ib_ports": ib, "eth_ports": eth}
    for source, chosen in _fabric_sources(inputs, ports):
        layers = {p.get("link_layer") for p in chosen} - {None}
        if len(layers) == 1 and (fabric := _LAYER_FABRIC.get(layers.pop())):
            return Observation("", {"fabric": fabric, **value, "from": source}, OK, reason=f"fabric from {source}")
    every = Counter(p.get("link_layer") for p in ports)
    all_ib, all_eth = every.get("InfiniBand", 0), every.get("Ethernet", 0)
    fabric = "ib" if all_ib >= all_eth and all_ib else "roce" if all_eth else "none"
    source = "the link layer most RDMA ports have"
    return Observation("", {"fabric": fabric, **value, "from": source}, OK, reason=f"fabric from {source}")


def _fabric_sources(inputs: Inputs, ports: list[dict]):
    """(source, ports) in the order that decides the fabric; a source that says nothing is skipped."""
    env = inputs.get("nccl.env")
    env_vars = (env.value or {}).get("vars") or {} if env is not None and env.status == OK else {}
    version = inputs.get("nccl.version")
    version = (version.value or {}).get("version") if version is not None and version.status == OK else None
    hca = env_vars.get("NCCL_IB_HCA")
    if hca:
        chosen = _prefix_filter(hca, version)
        yield f"NCCL_IB_HCA={hca}", [p for p in ports if chosen(str(p.get("device")), str(p.get("port")))]
    from_log = _log_rails(inputs)
    if from_log:
        yield "NCCL's NET/IB : Using lines", [p for p in ports if p["name"] in from_log]
    devices, why = derive_job.rail_devices(inputs, ports)
    if devices:
        yield "the NICs nearest the GPUs (nvidia-smi topo -m)", [p for p in ports if p.get("device") in devices]


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
    lost: set[str] = set()  # down ports a GPU's own NUMA node shows it lost (numa_lost_rails)
    if from_log is not None and {p["name"] for p in ports} & from_log:
        ports, source, known = [p for p in ports if p["name"] in from_log], "NCCL's NET/IB : Using lines", True
    elif hca:
        selected = _prefix_filter(hca, _job_version(inputs))
        ports, source, known = [p for p in ports if selected(str(p.get("device")), str(p.get("port")))], \
            f"NCCL_IB_HCA={hca}", True
    elif devices is not None:
        ports, source, known = [p for p in ports if p.get("device") in devices], why, True
    else:
        # Nothing says which ports are the rails: guess the most common model; a port that is
        # down may then be a storage port, so its state is unknown rather than a fault.
        names = derive_job.model_rails(ports)
        ports, source, known = [p for p in ports if p["name"] in names], f"the most common HCA model ({why})", False
        lost = derive_numa.numa_lost_rails(inputs, ports)  # unless a GPU's own NUMA node shows it lost one
        if lost:
            source += (f"; {', '.join(sorted(lost))} down where the GPUs of its NUMA node outnumber its "
                       "active ports (NCCL gives each GPU a NIC of its own CPU)")
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
        p["declared_gbps"], p["rail"] = declared_gbps, known or (True if p["name"] in lost else None)
        p.update(derive_linkcap.capability(p, inputs))  # rated_gbps from both ends, else the PCI-id table
        p["degraded"] = _degraded(p)
    reason = f"rails from {source}" + (f"; not rails: {', '.join(not_rails)}" if not_rails else "")
    reason += derive_linkcap.summary(ports)
    if not ports:
        return Observation("", [], NOT_APPLICABLE, reason=f"no {layer or 'RDMA'} ports ({reason})")
    return Observation("", ports, OK, reason=reason)


def _degraded(p: dict) -> bool | None:
    """Below its peers or the declared rate: degraded. Else what both ends of the link support
    decides (derive_linkcap: degraded, or built for that speed); below only the PCI-id table's
    rating is unknown, since one model is sold at several rates; declare link_gbps to decide."""
    gbps = p["rate_gbps"]
    if not _active(p) or gbps is None:
        return False
    if (p["expected_gbps"] and gbps < p["expected_gbps"]) or (p["declared_gbps"] and gbps < p["declared_gbps"]):
        return True
    return derive_linkcap.below_capability(p)


def _records(obs: Observation | None) -> dict[str | None, dict]:
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


# ACS on the PCIe switch ports that GPU<->NIC traffic crosses. Root ports are left out: the kernel
# requests ACS on every ACS-capable port whenever an IOMMU is present (pci_request_acs() in
# drivers/iommu/intel/dmar.c and drivers/iommu/amd/init.c), and traffic between a GPU and its
# PIX/PXB NIC under a shared switch never reaches them (NCCL troubleshooting guide, "PCI Access
# Control Services (ACS)": "If PCI switches have ACS enabled, it needs to be disabled").
# Redirect with Direct Translated P2P (ACSCtl DirectTrans+, PCI_ACS_DT in the kernel's
# include/uapi/linux/pci_regs.h) lets requests the NIC has already translated through ATS go
# straight to the peer: NVIDIA's VM guide for HGX ("ATS and ACS configuration", NVIDIA AI Enterprise
# optimizing-vm-configuration appendix) enables ATS on the NIC (lspci `ATSCtl: Enable+`) and sets
# ACS on the switch ports to allow it. That port is healthy when every NIC it serves has ATS on.
_SWITCH_PORTS = ("Upstream Port", "Downstream Port")


def _nics_served(port: dict, below: list[dict], bridges: list[dict], devices: list[dict]) -> list[dict]:
    """The NICs whose traffic with the GPUs below the port crosses it: those below it, else those
    under the narrowest bridge above it that holds a NIC (the GPU's PIX/PXB NIC)."""
    nics = [d for d in below if d["kind"] == "nic"]
    if nics:
        return nics
    above = sorted((b for b in bridges if b is not port and pci_path.holds(b, port["bdf"])),
                   key=lambda b: b["subordinate_bus"] - b["secondary_bus"])
    for bridge in above:
        nics = [d for d in pci_path.below(bridge, devices) if d["kind"] == "nic"]
        if nics:
            return nics
    return []


def _acs_port(port: dict, below: list[dict], nics: list[dict]) -> dict:
    flags = port.get("acs_ctl") or {}
    shown = " ".join(f"{k}{'+' if flags.get(k) else '-'}" for k in ("ReqRedir", "CmpltRedir", "DirectTrans")) if flags else None
    ats = [n.get("ats_enabled") for n in nics]
    redirect, accepted = port.get("acs_redirect"), None
    if redirect and flags.get("DirectTrans") and nics:
        if all(a is True for a in ats):
            redirect, accepted = False, "DirectTrans+ with ATS enabled on " + ", ".join(n["bdf"] for n in nics)
        elif not any(a is False for a in ats):
            redirect = None  # the NICs' ATS state could not be read
    return {"name": port["bdf"], "acs": shown, "nic_ats": ", ".join(f"{n['bdf']}={n.get('ats_enabled')}" for n in nics) or None,
            "redirect": redirect, "accepted": accepted, "serves": ", ".join(f"{d['bdf']} ({d['kind']})" for d in below),
            "port_type": port.get("port_type")}


def pci_acs(inputs: Inputs) -> Observation:
    """ACS redirect on each PCIe switch port above a GPU or an RDMA NIC (lspci -vvv; pasted too):
    redirect true blocks GPU<->NIC P2P, false lets it through (off, or DirectTrans+ with ATS on the
    NICs it serves), null when the port's ACS or its NICs' ATS could not be read."""
    if (blocked := _blocked(inputs, "pci.lspci")) is not None:
        return blocked
    devices = [d for d in inputs["pci.lspci"].value or [] if isinstance(d, dict) and d.get("bdf")]
    bridges = [d for d in devices if d.get("secondary_bus") is not None]
    ports = []
    for port in bridges:
        below = pci_path.below(port, devices)
        hidden = port.get("access_denied") and port.get("port_type") is None  # its ACS is unknown, not off
        if below and (port.get("port_type") in _SWITCH_PORTS or hidden):
            ports.append(_acs_port(port, below, _nics_served(port, below, bridges, devices)))
    reason = "" if ports else "no PCIe switch port above a GPU or NIC in lspci -vvv"
    return Observation("", ports, OK, reason=reason)


DERIVATIONS: dict[str, Callable[[Inputs], Observation]] = {
    "node_fabric": node_fabric,
    "nccl_env": nccl_env,
    "compute_ports": compute_ports,
    "pci_acs": pci_acs,
}
DERIVATIONS.update(derive_job.DERIVATIONS)  # the job/topology derivations
DERIVATIONS.update(derive_topo.DERIVATIONS)  # each GPU's closest NIC, VM or not
DERIVATIONS.update(derive_gdr.DERIVATIONS)  # GPUDirect RDMA: peermem, DMA-BUF, NCCL_NET_GDR_LEVEL on the real paths
DERIVATIONS.update(derive_roce.DERIVATIONS)  # GID choice, QoS and NCCL's priority
DERIVATIONS.update(derive_counters.DERIVATIONS)  # what the counters say (IB and RoCE)
DERIVATIONS.update(derive_peer.DERIVATIONS)  # the switch side of each IB link
DERIVATIONS.update(derive_host.DERIVATIONS)  # the job's RDMA userspace, the kernel log
DERIVATIONS.update(derive_ceiling.DERIVATIONS)  # the measured busbw against the hardware's ceiling (issue 28)
DERIVATIONS.update(derive_plugin.DERIVATIONS)  # NCCL's external net plugins (EFA, GPUDirect-TCPX/TCPXO)
