"""Counter derivations: what moved between the two samples, judged only where it can be.

A value is None (unknown) when a counter it needs is absent, unreadable, saturated, missing from
one sample, or when the window was idle: "no growth" is evidence only while traffic flows (loss
and pause appear under load). Growth of an error or loss count stands even on an idle window (an
error is an error); a relative figure (per million packets, a fraction of the window) does not.
Each row's `unknown` lists its values left unknown; the observation's reason says why and what
clears it, once per cause, so the report says it. The thresholds live in the runbook checks and in the table
of runbooks/README.md; the counter names per driver in counter_names.py.
"""

from __future__ import annotations

from allreduce_doctor.domain import IB_LINK_ERRORS
from allreduce_doctor.observations import NOT_APPLICABLE, OK, Observation
from allreduce_doctor.probes import counter_names, derive_roce

Inputs = dict[str, Observation]

# Below this share of one direction's line rate (both directions counted) the window is idle: a
# counter check there says nothing about behaviour under load.
IDLE_BELOW = 0.01
RERUN = "re-run under load with `--interval 10`"
CLEAR_PMA = "clear the port counters with `perfquery -R` (root) and re-measure"
# port_xmit_wait counts ticks of 8 bytes of lost transmit on current ConnectX HCAs: lost bits =
# delta x (7+1) x 8 (NVIDIA staff in NVIDIA/ib-traffic-monitor#3; docs/counters.md section 1).
XMIT_WAIT_BITS_PER_TICK = 64
# Roles that back up a primary signal: per-priority drops back up the transport loss counters
# (every lost RDMA packet is retransmitted), the pause-storm watchdog backs up transmit pause
# time, the PCIe counters say why a host transmits pause (firmware without the MCAM PCIe
# performance group shows none: mlx5 en_stats.c mlx5e_grp_pcie_get_num_stats). A NIC that has no
# such counter at all (bnxt_en has no per-priority discards, firmware
# without the watchdog) is judged by the primary signal and lists the role in `lacks`; one that
# has it but lost it between the samples is unknown like any other counter.
SECOND_OPINIONS = ("prio_discards", "storm", "pcie_stall")
# The values of a RoCE row that the runbook judges (None when unknown), and those only shown:
# counts over every priority that the fleet compares between nodes, never judged on one node.
JUDGED = ("load", "idle", "loaded", "phy_errors", "rdma_loss", "discards_ppm", "pause_rx_fraction", "pause_tx_fraction",
          "storm_events", "pcie_stall", "cnp", "cnp_sent_rate", "cnp_handled_rate")
SHOWN = {"pause_rx": "pause_rx_frames", "pause_tx": "pause_tx_frames", "eth_loss": "port_discards"}
IB_WORDS = 4  # port_xmit_data / port_rcv_data count 4-octet words (kernel ABI sysfs-class-infiniband)


def sampled_records(obs: Observation | None) -> dict[str | None, dict]:
    """Sampled records of a fan-out fact by instance name ({} when the fact is not ok)."""
    if obs is None or obs.status != OK or not isinstance(obs.value, list):
        return {}
    return {r.get("name"): r for r in obs.value if isinstance(r, dict)}


def total(record: dict | None, names: list[str]) -> tuple[int | None, str]:
    """(sum of the known deltas, why the sum is not the whole story: '' when it is)."""
    if not names:
        return None, "this driver has no such counter"
    if record is None or not isinstance(record.get("delta"), dict):
        why = (record or {}).get("_reason") or "not sampled twice"
        return None, f"counters could not be read: {why}"
    delta, found, why, known = record["delta"], 0, "", 0
    for name in names:
        if name in (record.get("absent") or ()):
            why = why or f"{name} is missing from one sample or unreadable"
        elif name in (record.get("saturated") or ()):
            why = why or f"{name} is pinned at its maximum ({(record.get('values') or {}).get(name)}): {CLEAR_PMA}"
        elif name in delta and delta[name] is None:
            why = why or f"{name} went backwards (reset between the samples): re-measure"
        elif name in delta:
            found, known = found + 1, known + delta[name]
    if not found and not why:
        why = f"none of {', '.join(names)} exists on this port"
    return known, why


def judged_count(record: dict | None, names: list[str], idle: bool | None, idle_why: str) -> tuple[int | None, str]:
    """A count that may be judged '> 0': growth stands; 'no growth' needs every counter and traffic."""
    known, why = total(record, names)
    if known:
        return known, ""
    if why:
        return None, why
    return (None, idle_why) if idle is not False else (known, "")


def _loaded(idle: bool | None) -> bool | None:
    """True when traffic flowed; None (unknown, never false) when idle or not known: an idle
    window is 'not measured', not a 'no'."""
    return True if idle is False else None


def _load(bytes_moved: int | None, why: str, gbps, interval) -> tuple[float | None, bool | None, str]:
    """(share of line rate, idle?, why idle or unknown)."""
    if bytes_moved is None:
        return None, None, f"whether traffic flowed is unknown ({why}): {RERUN}"
    if not isinstance(gbps, (int, float)) or gbps <= 0 or not interval:
        idle = bytes_moved == 0
        return None, idle, f"the window was idle (no bytes moved): {RERUN}" if idle else ""
    load = round(bytes_moved * 8 / (gbps * 1e9 * interval), 6)
    idle = load < IDLE_BELOW
    return load, idle, f"the window was idle ({load:.2%} of line rate): {RERUN}" if idle else ""


def _ratio(value: float | None, why: str, idle: bool | None, idle_why: str) -> tuple[float | None, str]:
    """A relative figure: unknown on an idle window whatever it shows."""
    if value is None:
        return None, why
    return (None, idle_why) if idle is not False else (value, "")


def active_ports(inputs: Inputs, layer: str) -> list[dict] | Observation:
    ports = inputs["rdma.compute_ports"]
    if ports.status != OK:
        return Observation("", None, ports.status, reason=f"rdma.compute_ports: {ports.reason or ports.status}")
    return [p for p in ports.value if p.get("link_layer") == layer and (p.get("state") or {}).get("name") == "ACTIVE"]


def finish_rows(rows: list[dict], none_reason: str) -> Observation:
    """The rows, with one reason per distinct cause of unknown values: '<why> (<ports>)'."""
    if not rows:
        return Observation("", [], NOT_APPLICABLE, reason=none_reason)
    ports: dict[str, list[str]] = {}
    for row in rows:
        for why in row["unknown"].values():
            names = ports.setdefault(why, [])
            if row["name"] not in names:
                names.append(row["name"])
        row["unknown"] = sorted(row["unknown"])  # the values left unknown; why, once, in the reason
    return Observation("", rows, OK, reason="; ".join(f"{why} ({_ports(names, len(rows))})" for why, names in ports.items()))


def _ports(names: list[str], of: int) -> str:
    if len(names) == of > 1:
        return f"all {of} ports"
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def ib_counters(inputs: Inputs) -> Observation:
    """Per active IB compute port: link errors, discards per million packets, xmit_wait share."""
    ports = active_ports(inputs, "InfiniBand")
    if isinstance(ports, Observation):
        return ports
    records, rows = sampled_records(inputs["rdma.counters"]), []
    for port in ports:
        rec, unknown = records.get(port["name"]), {}
        moved, why = total(rec, ["port_xmit_data", "port_rcv_data"])
        words = None if why or moved is None else moved * IB_WORDS
        load, idle, idle_why = _load(words, why, port.get("rate_gbps"), (rec or {}).get("interval"))
        row = {"name": port["name"], "interval": (rec or {}).get("interval"), "rate_gbps": port.get("rate_gbps"),
               "load": load, "idle": idle, "loaded": _loaded(idle)}
        row["link_errors"], unknown["link_errors"] = judged_count(rec, list(IB_LINK_ERRORS), idle, idle_why)
        discards, why = total(rec, ["port_xmit_discards"])
        packets, why_p = total(rec, ["port_xmit_packets"])
        row["discards"] = None if why else discards
        ppm = None if why or why_p or discards is None or packets is None else \
            round(discards * 1e6 / max(packets + discards, 1), 3)
        row["discards_ppm"], unknown["discards_ppm"] = _ratio(ppm, why or why_p, idle, idle_why)
        wait, why = total(rec, ["port_xmit_wait"])
        gbps, seconds = port.get("rate_gbps"), row["interval"]
        share = None
        if not why and wait is not None and isinstance(gbps, (int, float)) and gbps > 0 and seconds:
            share = round(wait * XMIT_WAIT_BITS_PER_TICK / (gbps * 1e9 * seconds), 6)
        row["xmit_wait_fraction"], unknown["xmit_wait_fraction"] = _ratio(share, why or "the port's rate is unknown", idle, idle_why)
        row["unknown"] = {k: v for k, v in unknown.items() if v}
        rows.append(row)
    return finish_rows(rows, "no active InfiniBand compute ports")


def roce_counters(inputs: Inputs) -> Observation:
    """Per active RoCE compute port: PHY errors, loss, pause time per direction, CNPs, on NCCL's priority."""
    ports = active_ports(inputs, "Ethernet")
    if isinstance(ports, Observation):
        return ports
    stats, hw = sampled_records(inputs["net.ethtool_stats"]), sampled_records(inputs["rdma.hw_counters"])
    prio_of = {r.get("name"): r for r in (inputs["roce.priority"].value or [])} if inputs["roce.priority"].status == OK else {}
    # Where the window's bytes show NCCL's priority (NCCL_IB_TC set after exec), that one is judged.
    traffic = inputs.get("roce.traffic")
    for r in (traffic.value or []) if traffic is not None and traffic.status == OK else []:
        if r.get("from") == "tx_prioN_bytes" and r.get("name") in prio_of:
            prio_of[r["name"]] = dict(prio_of[r["name"]], priority=r["priority"])
    # A LAG device's bond members each carry traffic: one row per member (the transport
    # counters are the RDMA port's, shared by its members).
    lag = derive_roce.members(inputs)
    rows = [_roce_row(dict(port, netdev=nd), stats.get(nd), hw.get(port["name"]), prio_of.get(nd) or {})
            for port in ports for nd in lag.get(port["name"], [port.get("netdev")])]
    return finish_rows(rows, "no active RoCE compute ports")


def _roce_row(port: dict, eth: dict | None, hwc: dict | None, prio: dict) -> dict:
    records = {"eth": eth, "hw": hwc}
    driver = counter_names.driver_of(_seen(hwc), _seen(eth))
    p = prio.get("priority") if isinstance(prio.get("priority"), int) else None
    interval = (eth or hwc or {}).get("interval")
    row = {"name": port.get("netdev"), "port": port["name"], "driver": driver, "priority": p, "interval": interval,
           "lacks": [r for r in SECOND_OPINIONS if not _present(records, driver, r, p)]}
    if driver is None:
        why = "none of the counters of a known driver (mlx5, bnxt_re/bnxt_en, irdma/ice) is present: cannot judge this NIC"
        row.update({v: None for v in (*JUDGED, *SHOWN)}, unknown={v: why for v in JUDGED})
        return row

    def role(name: str, count: bool = False) -> tuple[int | None, str]:
        group, names = _role(records, driver, name, p)
        if not names:
            return None, "this driver has no such counter"
        return judged_count(group, names, idle, idle_why) if count else total(group, names)

    idle, idle_why = None, ""
    moved, why = role("prio_bytes") if _role(records, driver, "prio_bytes", p)[1] else role("rdma_bytes")
    load, idle, idle_why = _load(None if why else moved, why, port.get("rate_gbps"), interval)
    row.update(load=load, idle=idle, loaded=_loaded(idle))
    unknown: dict[str, str] = {}
    for value, name in (("phy_errors", "phy_errors"), ("rdma_loss", "loss"), ("storm_events", "storm"),
                        ("pcie_stall", "pcie_stall")):
        row[value], unknown[value] = role(name, count=True)
    (uncorrected, why_u), (bits, why_b) = role("phy_uncorrected"), role("phy_bits")
    row["phy_ber"] = (uncorrected / bits if not why_u and not why_b and uncorrected is not None and bits
                      else None)  # shown, not judged
    discards, why = role("prio_discards")
    packets, why_p = role("prio_packets")
    ppm = None if why or why_p or discards is None or packets is None else \
        round(discards * 1e6 / max(packets + discards, 1), 3)
    row["discards_ppm"], unknown["discards_ppm"] = _ratio(ppm, why or why_p, idle, idle_why)
    for direction in ("rx", "tx"):
        paused, why = role(f"pause_{direction}_us")
        if prio.get("pfc_on_priority") is False:
            paused, why = 0, ""  # no PFC on NCCL's priority: nothing can pause it there
        share = round(paused / (interval * 1e6), 6) if not why and interval else None
        row[f"pause_{direction}_fraction"], unknown[f"pause_{direction}_fraction"] = _ratio(share, why or "no interval", idle, idle_why)
    for value, name in SHOWN.items():
        pairs = counter_names.every_priority(driver, name)
        known, why = total(records["eth"], [n for _, n in pairs])
        row[value] = None if why else known  # for the fleet's comparison between nodes; not judged here
    sent, why_s = role("cnp_sent")
    handled, why_h = role("cnp_handled")
    row["cnp"] = None if why_s or why_h or sent is None or handled is None else sent + handled
    for value, count, why in (("cnp_sent_rate", sent, why_s), ("cnp_handled_rate", handled, why_h)):
        rate = round(count / interval, 3) if not why and interval else None
        row[value], unknown[value] = _ratio(rate, why or "no interval", idle, idle_why)
    if p is None:
        for value in ("discards_ppm", "pause_rx_fraction", "pause_tx_fraction"):
            if row[value] is None:
                unknown[value] = "NCCL's priority is unknown (NCCL_IB_TC, trust mode or the DSCP map could not be read)"
    for lacked, value in (("prio_discards", "discards_ppm"), ("storm", "storm_events"), ("pcie_stall", "pcie_stall")):
        if lacked in row["lacks"]:
            unknown[value] = ""  # judged without it (SECOND_OPINIONS)
    row["unknown"] = {k: v for k, v in unknown.items() if v}
    return row


def _seen(record: dict | None) -> set[str]:
    """Counter names a sampled record shows, in either sample."""
    return set((record or {}).get("delta") or {}) | set((record or {}).get("absent") or ())


def _present(records: dict, driver: str | None, role: str, priority: int | None) -> bool:
    """Whether this port shows any counter of a role (in either sample)."""
    record, names = _role(records, driver, role, priority) if driver else (None, [])
    seen = _seen(record)
    return any(name in seen for name in names)


def _role(records: dict, driver: str, role: str, priority: int | None) -> tuple[dict | None, list[str]]:
    """(the sampled record holding a role's counters, their names) on this driver."""
    pairs = counter_names.names(driver, role, priority)
    groups = {group for group, _ in pairs}
    return (records[groups.pop()] if len(groups) == 1 else None), [name for _, name in pairs]


DERIVATIONS = {"ib_counters": ib_counters, "roce_counters": roce_counters}
