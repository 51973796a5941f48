"""Derived RoCE facts: PFC/trust/DSCP per netdev and the priority NCCL's traffic lands on (with PFC
and ECN there); the GID NCCL uses is derive_gid.py's. Registered into derive.DERIVATIONS."""

from __future__ import annotations

import re
from typing import Any

from allreduce_doctor.observations import MISSING, NOT_APPLICABLE, OK, Observation
from allreduce_doctor.probes import derive_ecn
from allreduce_doctor.probes.derive_gid import gid_choice, gid_table
from allreduce_doctor.probes.derive_job import blocked_input as _blocked

Inputs = dict[str, Observation]


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


def _unread_prios(record: dict | None) -> list[int]:
    """Priorities whose enable file was listed but could not be read or parsed: unknown, not off."""
    return sorted(int(k) for k, v in (record or {}).items() if str(k).isdigit() and v is None)


def _ecn_on(row: dict, prio: int) -> bool | None:
    """ECN on for `prio` at both the notification and the reaction point; None when an enable
    that decides it was not read."""
    found = [True if prio in row[on] else None if prio in row.get(on + "_unread", ()) else False for on in ("ecn_np", "ecn_rp")]
    return False if False in found else None if None in found else True


def _ecn_by_netdev(obs) -> dict[str, dict]:
    """netdev -> its per-priority ECN enables; an instance that was not read (its glob unknown,
    nothing readable) is left out: unknown, never "every priority off"."""
    if obs.status != OK:
        return {}
    return {r["name"]: r for r in obs.value or [] if "_status" not in r}


def _traffic_class(env: dict | None, tc_text) -> int | None:
    """NCCL_IB_TC as an integer; unset or -1 means TC 0 (NCCL's default: NCCL_PARAM(IbTc, "IB_TC", 0)
    before v2.26.2-1, -1 = the communicator's class else 0 since, src/transport/net_ib.cc);
    None when unknown."""
    if env is None:
        return None
    if tc_text is None or not str(tc_text).strip() or str(tc_text).strip() == "-1":
        return 0
    try:
        return int(str(tc_text).strip(), 0)
    except ValueError:
        return None


# Where the ECN enable lives: MLNX_OFED's ecn/roce_np|roce_rp/enable/P sysfs; inbox mlx5 has no
# per-priority enable (drivers/infiniband/hw/mlx5/cong.c: debugfs congestion parameters only);
# bnxt_re's is debugfs cc_config/enable_cc (drivers/infiniband/hw/bnxt_re/debugfs.c), root only.
ECN_UNREADABLE = ("the inbox mlx5 driver exposes no per-priority ECN enable (MLNX_OFED's ecn sysfs does); "
                  "bnxt_re shows it in /sys/kernel/debug/bnxt_re/BDF/cc_config/enable_cc, as root")
_GLOBAL_TCLASS = re.compile(r"Global tclass=(\d+)")


def _global_tclass(inputs: Inputs) -> dict[str, int]:
    """'dev/port' -> the MLNX_OFED driver's global traffic class, when one is set. mlx5
    tclass_get_tclass_locked() (mlnx-ofa_kernel drivers/infiniband/hw/mlx5/main_ext.c) applies
    it to every RoCE QP whatever the application asked; the file is empty when none is set."""
    obs = inputs.get("rdma.tclass")
    if obs is None or obs.status != OK or not isinstance(obs.value, list):
        return {}
    found = {}
    for rec in obs.value:
        m = _GLOBAL_TCLASS.search(str(rec.get("traffic_class") or ""))
        if m and int(m.group(1)) <= 255:
            found[rec.get("name")] = int(m.group(1))
    return found


def _busiest_priority(inputs: Inputs) -> dict[str, int]:
    """netdev -> the priority that carried at least half of the transmitted bytes in the window
    (mlx5 tx_prio{N}_bytes): where the traffic really went, whatever the environment said
    (/proc/PID/environ misses variables a launcher sets after exec, proc_pid_environ(5))."""
    obs = inputs.get("net.ethtool_stats")
    if obs is None or obs.status != OK or not isinstance(obs.value, list):
        return {}
    out = {}
    for rec in obs.value:
        delta = rec.get("delta") if isinstance(rec, dict) else None
        if not isinstance(delta, dict):
            continue
        sent: dict[int, Any] = {p: delta.get(f"tx_prio{p}_bytes") for p in range(8)}
        sent = {p: v for p, v in sent.items() if isinstance(v, (int, float)) and v > 0}
        total = sum(sent.values())
        if total:
            prio, most = max(sent.items(), key=lambda kv: kv[1])
            if most * 2 >= total:
                out[rec.get("name")] = prio
    return out


def members(inputs: Inputs) -> dict[str, list[str]]:
    """RDMA port name -> its physical netdevs: every bond member of a LAG device (mlx5_bond_N),
    else the one netdev (net.roce_members, one record per roce_netdev instance)."""
    obs = inputs.get("net.roce_members")
    out: dict[str, list[str]] = {}
    for rec in (obs.value or []) if obs is not None and obs.status == OK and isinstance(obs.value, list) else []:
        if rec.get("device") and rec.get("port") and rec.get("netdev"):
            out.setdefault(f"{rec['device']}/{rec['port']}", []).append(rec["netdev"])
    return out


def roce_priority(inputs: Inputs) -> Observation:
    """Per RoCE compute netdev: the traffic class (driver's global class, else NCCL_IB_TC, else the
    site's declared one) -> DSCP -> priority, PFC/ECN on it, and the declared RoCE mode."""
    if (blocked := _blocked(inputs, "rdma.compute_ports", "net.qos")) is not None:
        return blocked
    env = inputs["nccl.env"].value if inputs["nccl.env"].status == OK else None
    tc_text = ((env or {}).get("vars") or {}).get("NCCL_IB_TC")
    policy = inputs["site.policy"].value or {} if inputs["site.policy"].status == OK else {}
    tc_from = "NCCL_IB_TC" if tc_text is not None else "NCCL's default (NCCL_IB_TC unset)"
    if tc_text is None and policy.get("nccl_ib_tc") is not None:
        tc_text, tc_from = str(policy["nccl_ib_tc"]), f"the declared nccl_ib_tc ({policy.get('source')})"
        env = env or {}
    elif env is not None and not env.get("job_found") and tc_text is None:
        env = None  # no job and no config: the traffic class NCCL would use is unknown
    global_tc = _global_tclass(inputs)
    qos_by = {r["name"]: r for r in inputs["net.qos"].value}
    np_by, rp_by = _ecn_by_netdev(inputs["net.ecn_np"]), _ecn_by_netdev(inputs["net.ecn_rp"])
    cnp_by, cc = _cnp_settings(inputs), _bnxt_cc(inputs)
    out = []
    ports = [p for p in inputs["rdma.compute_ports"].value if p.get("link_layer") == "Ethernet"]
    if ports and not any(p.get("netdev") in qos_by for p in ports):
        # Which netdev belongs to which port is not known (pasted mlnx_qos without ibdev2netdev):
        # each QoS record still says what PFC does on that RoCE netdev.
        ports = [{"netdev": name, "name": None, "link_layer": "Ethernet"} for name in qos_by]
    lag = members(inputs)  # each member of a LAG's bond has its own PFC, buffers and ECN
    ports = [dict(p, netdev=m) for p in ports for m in lag.get(p.get("name") or "", [p.get("netdev")])]
    for port in ports:
        netdev = port.get("netdev")
        if not netdev:
            continue
        q = qos_by.get(netdev) or {}
        tc, source = _traffic_class(env, tc_text), tc_from
        if port["name"] in global_tc:
            tc, source = global_tc[port["name"]], "the driver's global traffic class (tc/1/traffic_class)"
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
        ecn = {"ecn_np": np_on, "ecn_rp": rp_on, "ecn_np_unread": _unread_prios(np_by.get(netdev)),
               "ecn_rp_unread": _unread_prios(rp_by.get(netdev))}
        ecn_on = None if prio is None or netdev not in np_by or netdev not in rp_by else _ecn_on(ecn, prio)
        if ecn_on is None and prio is not None and cc.get(netdev) is not None:
            ecn_on = cc[netdev]  # bnxt_re: one switch for the function's RoCE traffic
        out.append({
            "name": netdev, "port": port["name"], "tc": tc, "tc_from": source, "dscp": dscp, "trust": trust,
            "priority": prio, "pfc_enabled": pfc,
            "pfc_on_priority": None if prio is None or pfc is None else prio in pfc,
            "pfc_on_any": None if pfc is None else bool(pfc),
            "declared_lossy": policy.get("roce_mode") == "lossy",
            "declared_priority": policy.get("pfc_priority"),
            "ecn_np": np_on if netdev in np_by else None, "ecn_rp": rp_on if netdev in rp_by else None,
            **{k: v for k, v in ecn.items() if k.endswith("_unread") and v},  # only when some enable was not read
            "ecn_on_priority": ecn_on,
            "ecn_ect": None if tc is None else bool(tc & 0b11),
            **_off_declared(policy, prio, pfc),
            **_buffer(q, prio, pfc),
            **_cnp(cnp_by.get(netdev), q, prio),
        })
    if not out:
        return Observation("", [], NOT_APPLICABLE, reason="no RoCE compute netdevs")
    unread = [r["name"] for r in out if r["priority"] is not None and r["ecn_on_priority"] is None]
    return Observation("", out, OK, reason=f"ECN/DCQCN enable not readable on {', '.join(unread[:3])}"
                       f"{' and more' if len(unread) > 3 else ''}: {ECN_UNREADABLE}" if unread else "")


def _off_declared(policy: dict, prio: int | None, pfc: list | None) -> dict:
    """NCCL's priority and the PFC priorities against the site's declared pfc_priority (site.py).
    False when nothing is declared or the fabric is declared lossy: there is nothing to judge."""
    declared = policy.get("pfc_priority")
    if declared is None or policy.get("roce_mode") == "lossy":
        return {"off_declared": False, "off_declared_why": ""}
    if prio is None or pfc is None:
        return {"off_declared": None, "off_declared_why": "NCCL's priority or the PFC settings could not be read"}
    why = []
    if prio != declared:
        why.append(f"NCCL's traffic lands on priority {prio}, the site declares {declared}")
    if declared not in pfc:
        why.append(f"PFC is on {pfc or 'no priority'}, not on the declared priority {declared}")
    return {"off_declared": bool(why), "off_declared_why": "; ".join(why)}


def _buffer(q: dict, prio: int | None, pfc: list | None) -> dict:
    """The receive buffer NCCL's PFC priority maps to (mlnx_qos prio2buffer and buffer sizes).
    A zero-size buffer has no headroom for what is in flight when pause is sent (mlx5
    en/port_buffer.c update_xoff_threshold: xoff = size - headroom): that is a fault. A buffer
    shared with lossy priorities is only noted: update_buffer_lossy() makes a buffer holding any
    PFC priority lossless and never remaps priorities, so `mlnx_qos --pfc` alone (NVIDIA's own
    procedure) leaves every priority in buffer 0 on a healthy node. buffer_known is false where
    the tool shows no buffer map (iproute2 dcb, old mlnx_qos): nothing is judged there."""
    p2b: Any = q.get("prio2buffer")
    sizes: Any = q.get("buffers")
    known = isinstance(p2b, list) and isinstance(sizes, list) and prio is not None and pfc is not None \
        and prio in pfc and prio < len(p2b)
    if not known or pfc is None:  # known says pfc is a list
        return {"buffer_known": False, "buffer": None, "buffer_bad": None, "buffer_why": ""}
    buf = p2b[prio]
    size = sizes[buf] if buf < len(sizes) else None
    lossy = [p for p, b in enumerate(p2b) if b == buf and p not in pfc]
    why = [f"priority {prio} maps to buffer {buf}, whose size is 0"] if size == 0 else []
    if lossy:
        why.append(f"buffer {buf} also holds lossy priorities {lossy} (noted, not a fault)")
    return {"buffer_known": size is not None, "buffer": buf, "buffer_size": size, "buffer_lossy_prios": lossy,
            "buffer_bad": size == 0 if size is not None else None, "buffer_why": "; ".join(why)}


def _cnp_settings(inputs: Inputs) -> dict[str, dict]:
    """netdev -> {dscp, pcp} of the CNPs this host sends as a notification point: MLNX_OFED's
    ecn/roce_np/cnp_dscp and cnp_802p_prio (mlnx-ofa_kernel en_ecn.c), else the inbox mlx5
    debugfs cc_params/np_cnp_dscp and np_cnp_prio (drivers/infiniband/hw/mlx5/cong.c, root)."""
    out: dict[str, dict] = {}
    for fact, dscp_key, pcp_key in (("net.cc_mlx5", "np_cnp_dscp", "np_cnp_prio"),
                                    ("net.cnp_mlnx", "cnp_dscp", "cnp_802p_prio")):
        obs = inputs.get(fact)
        for rec in (obs.value or []) if obs is not None and obs.status == OK else []:
            if isinstance(rec.get(dscp_key), int) or isinstance(rec.get(pcp_key), int):
                out[rec["name"]] = {"dscp": rec.get(dscp_key), "pcp": rec.get(pcp_key)}
    return out


def _bnxt_cc(inputs: Inputs) -> dict[str, bool]:
    """netdev -> whether bnxt_re's congestion control runs and marks ECT: enable_cc and tos_ecn
    of /sys/kernel/debug/bnxt_re/BDF/cc_config (drivers/infiniband/hw/bnxt_re/debugfs.c,
    bnxt_re_cc_gen0_name; root). One setting for the function's RoCE traffic, not per priority."""
    obs = inputs.get("net.cc_bnxt")
    out = {}
    for rec in (obs.value or []) if obs is not None and obs.status == OK else []:
        if isinstance(rec.get("enable_cc"), int) and isinstance(rec.get("tos_ecn"), int):
            out[rec.get("name")] = rec["enable_cc"] == 1 and rec["tos_ecn"] != 0
    return out


def _cnp(settings: dict | None, q: dict, prio: int | None) -> dict:
    """The priority CNPs travel on. They steer DCQCN: queued behind NCCL's own congested data
    they arrive late and senders slow down late, so they belong on a priority of their own
    (NVIDIA's default DSCP 48 -> priority 6, strict on Cumulus). Unknown is not judged."""
    if not settings or prio is None:
        return {"cnp_known": False, "cnp_priority": None, "cnp_shares_data": None}
    if q.get("trust") == "dscp" and isinstance(settings.get("dscp"), int):
        cnp_prio = (q.get("dscp2prio") or {}).get(str(settings["dscp"]), settings["dscp"] >> 3)
    else:
        cnp_prio = settings.get("pcp")
    return {"cnp_known": cnp_prio is not None, "cnp_priority": cnp_prio, "cnp_dscp": settings.get("dscp"),
            "cnp_shares_data": None if cnp_prio is None else cnp_prio == prio}


def roce_traffic(inputs: Inputs) -> Observation:
    """roce.priority confirmed by the window's bytes: where NCCL_IB_TC was not seen (a launcher
    may set it after exec, which /proc/PID/environ does not show, proc_pid_environ(5)), the
    priority that carried at least half of the bytes is NCCL's priority. Kept apart from
    roce.priority so that a settings-only run (healthcheck) still decides from the settings."""
    if (blocked := _blocked(inputs, "roce.priority")) is not None:
        return blocked
    busiest = _busiest_priority(inputs)
    hw = derive_ecn.port_records(inputs.get("rdma.hw_counters"))
    out, said = [], ""
    for row in inputs["roce.priority"].value:
        prio, source = row.get("priority"), "settings"
        if str(row.get("tc_from", "")).startswith("NCCL's default") and row["name"] in busiest:
            prio, source = busiest[row["name"]], "tx_prioN_bytes"
        pfc = row.get("pfc_enabled")
        ecn_off, settings = _ecn_off(row, prio), row.get("ecn_on_priority")
        counted: dict = {}
        # no enable at all (inbox mlx5, bnxt_re's debugfs unread): the counters (derive_ecn); an
        # MLNX_OFED enable that could not be read stays unknown (the counters span every priority)
        if settings is None and row.get("priority") is not None and row.get("ecn_np") is None \
                and row.get("ecn_rp") is None and not row.get("ecn_np_unread") and not row.get("ecn_rp_unread"):
            on, counted["ecn_counters"] = derive_ecn.from_counters(hw.get(row.get("port")))
            ecn_off = ecn_off if ecn_off is not None or on is None else not on
            said = said or (counted["ecn_counters"] if on is None else "")
        out.append({"name": row["name"], "priority": prio, "from": source, "busiest_priority": busiest.get(row["name"]),
                    "pfc_mismatch": None if prio is None or pfc is None else
                    bool(pfc) and prio not in pfc and not row.get("declared_lossy"),
                    "ecn_off": ecn_off,
                    # ECN off on NCCL's priority by its settings, else by the window's congestion counters
                    "ecn_off_known": (not settings) if settings is not None else
                    (None if "ecn_counters" not in counted or ecn_off is None else ecn_off), **counted})
    # the roce.ecn check reads this fact: where ECN stays unknown, its reason says why (the settings'
    # reason from roce.priority, then what the counters said)
    why = inputs["roce.priority"].reason if any(r["ecn_off_known"] is None for r in out) else ""
    return Observation("", out, OK, reason="; ".join(w for w in (why, f"the congestion counters: {said}" if said else "") if w))


def _ecn_off(row: dict, prio: int | None) -> bool | None:
    """ECN/DCQCN off on the priority that carries the bytes: per priority where the driver has
    per-priority enables (MLNX_OFED), else the function-wide setting (bnxt_re enable_cc)."""
    np_on, rp_on = row.get("ecn_np"), row.get("ecn_rp")
    if np_on is None or rp_on is None:
        return None if row.get("ecn_on_priority") is None else not row["ecn_on_priority"]
    if prio is None:
        return None
    on = _ecn_on(row, prio)
    return None if on is None else not on


DERIVATIONS = {
    "roce_traffic": roce_traffic,
    "gid_table": gid_table,
    "gid_choice": gid_choice,
    "qos": qos,
    "roce_priority": roce_priority,
}
