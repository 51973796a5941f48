"""Derived facts: combine raw observations into the values the runbooks reason about.

Each derivation takes {fact: Observation} and returns an Observation. A derivation whose
essential input is not ok is itself not ok (missing evidence never turns into "healthy").
"""

from __future__ import annotations

from collections import Counter
from typing import Callable

from allreduce_doctor.observations import MISSING, NOT_APPLICABLE, OK, Observation
from allreduce_doctor.probes import derive_counters, derive_job
from allreduce_doctor.probes.derive_job import _prefix_filter

Inputs = dict[str, Observation]


def _blocked(inputs: Inputs, *facts: str) -> Observation | None:
    """An Observation passing on the first essential input that is not ok, else None."""
    for fact in facts:
        obs = inputs[fact]
        if obs.status != OK:
            return Observation("", obs.value if obs.status == NOT_APPLICABLE else None, obs.status,
                               reason=f"{fact}: {obs.reason or obs.status}")
    return None


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


def compute_ports(inputs: Inputs) -> Observation:
    """The RDMA ports NCCL uses, each with the rate it should run at (from its peers)."""
    if (blocked := _blocked(inputs, "rdma.ports", "node.fabric")) is not None:
        return blocked
    fabric = inputs["node.fabric"].value["fabric"]
    layer = {"ib": "InfiniBand", "roce": "Ethernet"}.get(fabric)
    env = inputs["nccl.env"].value or {} if inputs["nccl.env"].status == OK else {}
    hca = (env.get("vars") or {}).get("NCCL_IB_HCA", "")
    selected = _prefix_filter(hca) if hca else None
    ports = [dict(p) for p in inputs["rdma.ports"].value if p.get("link_layer") == layer]
    if selected is not None:
        ports = [p for p in ports if selected(str(p.get("device")), str(p.get("port")))]
    else:
        # Without NCCL_IB_HCA NCCL takes every port; storage/management NICs of another model
        # are still worth excluding from the rate comparison, so keep the most common HCA type.
        types = Counter(p.get("hca_type") for p in ports)
        if len(types) > 1:
            main_type = types.most_common(1)[0][0]
            ports = [p for p in ports if p.get("hca_type") == main_type]
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
        p["degraded"] = bool(_active(p) and exp_rate and rate.get("gbps") is not None and rate["gbps"] < exp_rate)
    reason = f"selected by NCCL_IB_HCA={hca}" if hca else ""
    if not ports:
        return Observation("", [], NOT_APPLICABLE, reason=f"no {layer or 'RDMA'} ports {reason}".strip())
    return Observation("", ports, OK, reason=reason)


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


def gid_table(inputs: Inputs) -> Observation:
    """One flat list of GID entries: port, index, gid, kind, ipv4, version, ndev."""
    if (blocked := _blocked(inputs, "rdma.gid_values")) is not None:
        return blocked
    types = {r["name"]: r for r in inputs["rdma.gid_types"].value or []} if inputs["rdma.gid_types"].status == OK else {}
    ndevs = {r["name"]: r for r in inputs["rdma.gid_ndevs"].value or []} if inputs["rdma.gid_ndevs"].status == OK else {}
    entries = []
    for record in inputs["rdma.gid_values"].value:
        port = record["name"]
        for index, gid in record.items():
            if not str(index).isdigit() or not isinstance(gid, dict) or gid.get("kind") == "empty":
                continue
            gtype = (types.get(port) or {}).get(index) or {}
            entries.append({
                "port": port, "index": int(index), "gid": gid.get("gid"), "kind": gid.get("kind"),
                "ipv4": gid.get("ipv4"), "version": gtype.get("version") if isinstance(gtype, dict) else None,
                "ndev": (ndevs.get(port) or {}).get(index),
            })
    entries.sort(key=lambda e: (e["port"], e["index"]))
    return Observation("", entries, OK)


def gid_choice(inputs: Inputs) -> Observation:
    """Per RoCE compute port: the GID NCCL will use and whether it routes (v2 + IPv4/global)."""
    if (blocked := _blocked(inputs, "rdma.gids", "rdma.compute_ports", "nccl.env")) is not None:
        return blocked
    pinned = (inputs["nccl.env"].value.get("vars") or {}).get("NCCL_IB_GID_INDEX")
    by_port: dict[str, list] = {}
    for entry in inputs["rdma.gids"].value:
        by_port.setdefault(entry["port"], []).append(entry)
    choices = []
    for port in inputs["rdma.compute_ports"].value:
        if port.get("link_layer") != "Ethernet":
            continue
        entries = by_port.get(port["name"], [])
        good = [e for e in entries if e.get("version") == 2 and e.get("kind") in ("ipv4", "global")]
        best = next((e for e in good if e["kind"] == "ipv4"), good[0] if good else None)
        choice = {"name": port["name"], "port": port["name"], "pinned": pinned, "recommended_index": best["index"] if best else None}
        if pinned is None or str(pinned).strip() in ("", "-1"):
            choice.update(index=None, mode="auto", routable=bool(good), kind=None, version=None)
        else:
            try:
                idx = int(str(pinned).strip())
            except ValueError:
                idx = None
            entry = next((e for e in entries if e["index"] == idx), None)
            choice.update(index=idx, mode="pinned", kind=entry and entry.get("kind"),
                          version=entry and entry.get("version"),
                          routable=bool(entry and entry.get("version") == 2 and entry.get("kind") in ("ipv4", "global")))
        choices.append(choice)
    return Observation("", choices, OK if choices else NOT_APPLICABLE, reason="" if choices else "no RoCE compute ports")


def qos(inputs: Inputs) -> Observation:
    """PFC, trust and DSCP map per netdev, from mlnx_qos or else iproute2 dcb."""
    mlnx = inputs["net.qos_mlnx"]
    if mlnx.status == OK:
        records = [dict(r, source="mlnx_qos") for r in mlnx.value if r.get("_status") is None]
        if records:
            return Observation("", records, OK, source=mlnx.source)
    pfc, app = inputs["net.pfc_dcb"], inputs["net.app_dcb"]
    if pfc.status == OK:
        apps = {r["name"]: r for r in (app.value or [])} if app.status == OK else {}
        records = []
        for r in pfc.value:
            if r.get("_status") is not None:
                continue
            a = apps.get(r["name"], {})
            records.append({"name": r["name"], "pfc_enabled": r.get("pfc_enabled"),
                            "trust": a.get("trust") or "pcp", "dscp2prio": a.get("dscp2prio") or {}, "source": "dcb"})
        if records:
            return Observation("", records, OK, source=pfc.source)
    reasons = "; ".join(f"{o.fact}: {o.reason or o.status}" for o in (mlnx, pfc) if o.status != OK)
    status = NOT_APPLICABLE if mlnx.status == NOT_APPLICABLE else MISSING
    return Observation("", None, status, reason=reasons or "no QoS tool output")


def _enabled_prios(record: dict | None) -> list[int]:
    if not record:
        return []
    return sorted(int(k) for k, v in record.items() if str(k).isdigit() and v == 1)


def _traffic_class(env: dict | None, tc_text) -> int | None:
    """NCCL_IB_TC as an integer; unset means TC 0, NCCL's default (COUNTERS.md 5.4); None if unknown."""
    if env is None:
        return None
    if tc_text is None or not str(tc_text).strip():
        return 0
    try:
        return int(str(tc_text).strip(), 0)
    except ValueError:
        return None


def roce_priority(inputs: Inputs) -> Observation:
    """Per RoCE compute netdev: NCCL_IB_TC -> DSCP -> priority, and PFC/ECN on that priority."""
    if (blocked := _blocked(inputs, "rdma.compute_ports", "net.qos")) is not None:
        return blocked
    env = inputs["nccl.env"].value if inputs["nccl.env"].status == OK else None
    tc_text = ((env or {}).get("vars") or {}).get("NCCL_IB_TC")
    if env is not None and not env.get("job_found") and tc_text is None:
        env = None  # no job and no config: the traffic class NCCL would use is unknown
    qos_by = {r["name"]: r for r in inputs["net.qos"].value}
    np_by = {r["name"]: r for r in inputs["net.ecn_np"].value or []} if inputs["net.ecn_np"].status == OK else {}
    rp_by = {r["name"]: r for r in inputs["net.ecn_rp"].value or []} if inputs["net.ecn_rp"].status == OK else {}
    out = []
    ports = [p for p in inputs["rdma.compute_ports"].value if p.get("link_layer") == "Ethernet"]
    if ports and not any(p.get("netdev") in qos_by for p in ports):
        # Which netdev belongs to which port is not known (pasted mlnx_qos without ibdev2netdev):
        # each QoS record still says what PFC does on that RoCE netdev.
        ports = [{"netdev": name, "name": None, "link_layer": "Ethernet"} for name in qos_by]
    for port in ports:
        netdev = port.get("netdev")
        if not netdev:
            continue
        q = qos_by.get(netdev) or {}
        tc = _traffic_class(env, tc_text)
        dscp = None if tc is None else tc >> 2
        trust = q.get("trust")
        if trust == "dscp" and dscp is not None:
            prio = (q.get("dscp2prio") or {}).get(str(dscp), dscp >> 3)
        elif trust == "pcp":
            sl = ((env or {}).get("vars") or {}).get("NCCL_IB_SL", "0")
            prio = int(sl) if str(sl).isdigit() else None
        else:
            prio = None
        pfc = q.get("pfc_enabled")
        np_on, rp_on = _enabled_prios(np_by.get(netdev)), _enabled_prios(rp_by.get(netdev))
        out.append({
            "name": netdev, "port": port["name"], "tc": tc, "dscp": dscp, "trust": trust, "priority": prio,
            "pfc_enabled": pfc, "pfc_on_priority": None if prio is None or pfc is None else prio in pfc,
            "pfc_on_any": None if pfc is None else bool(pfc),
            "ecn_np": np_on if netdev in np_by else None, "ecn_rp": rp_on if netdev in rp_by else None,
            "ecn_on_priority": None if prio is None or netdev not in np_by or netdev not in rp_by
            else prio in np_on and prio in rp_on,
            "ecn_ect": None if tc is None else bool(tc & 0b11),
        })
    if not out:
        return Observation("", [], NOT_APPLICABLE, reason="no RoCE compute netdevs")
    return Observation("", out, OK)


DERIVATIONS: dict[str, Callable[[Inputs], Observation]] = {
    "node_fabric": node_fabric,
    "nccl_env": nccl_env,
    "compute_ports": compute_ports,
    "gid_table": gid_table,
    "gid_choice": gid_choice,
    "qos": qos,
    "roce_priority": roce_priority,
}
DERIVATIONS.update(derive_job.DERIVATIONS)  # the job/topology derivations
DERIVATIONS.update(derive_counters.DERIVATIONS)  # what the counters say (IB and RoCE)
