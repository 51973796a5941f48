"""Compare node records (node_settings.py): majority value and odd nodes per setting, numeric outliers
by median and MAD, and the patterns only a fleet shows (a pause cascade, local or fabric-wide loss).

Ties: when no value holds a strict majority the most common one (then the one seen first, in
node order) is reported as the majority and the entry is marked `split`.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from typing import Any

from allreduce_doctor.fleet.node_settings import METRICS, SETTINGS

ABSENT = "(absent)"  # a port (or an NCCL variable: UNSET) the other nodes have and this one lacks
UNSET = "(unset)"
Z_LIMIT = 3.5  # modified z-score (Iglewicz and Hoaglin): 0.6745 * |x - median| / MAD
REL_FLOOR = 0.10  # and at least 10% away from the median
ABS_FLOOR = {"link_rate_gbps": 1.0, "pause_rate": 1000.0, "pause_tx_rate": 1000.0, "loss_rate": 0.5,
             "cnp_rate": 1000.0, "phy_error_rate": 0.5, "xmit_wait_rate": 100000.0, "ib_error_rate": 0.5,
             "busbw_gbs": 1.0}
MIN_OUTLIER_NODES = 3  # a median of two is no reference


@dataclass
class Comparison:
    settings: list[dict] = field(default_factory=list)  # every compared key, agreeing or not
    outliers: list[dict] = field(default_factory=list)
    patterns: list[dict] = field(default_factory=list)  # {cause, scope, nodes, ports?, summary}

    @property
    def mismatched(self) -> list[dict]:
        return [s for s in self.settings if s["odd"]]


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def majority(values: dict[str, Any]) -> tuple[Any, int, dict[str, Any]]:
    """(the most common value, how many nodes hold it, {node: value} of the others)."""
    groups: dict[str, list[str]] = {}
    first: dict[str, Any] = {}
    for node, value in values.items():
        key = _canon(value)
        groups.setdefault(key, []).append(node)
        first.setdefault(key, value)
    best = max(groups, key=lambda k: len(groups[k]))  # max keeps the first of equals: node order
    return first[best], len(groups[best]), {n: v for n, v in values.items() if _canon(v) != best}


def _entry(key: str, title: str, owner: str, values: dict[str, Any]) -> dict:
    value, count, odd = majority(values)
    return {"key": key, "title": title, "owner": owner, "majority": value, "majority_nodes": count,
            "nodes": len(values), "split": count * 2 <= len(values) and bool(odd), "odd": odd}


def _port_entry(key: str, maps: dict[str, dict]) -> dict:
    """One entry per per-port key: the majority per port, odd nodes with only their odd ports."""
    names = sorted({port for m in maps.values() for port in m})
    per_port = {port: majority({n: m.get(port, ABSENT) for n, m in maps.items()}) for port in names}
    odd: dict[str, dict] = {}
    for port, (_value, _count, others) in per_port.items():
        for node, value in others.items():
            odd.setdefault(node, {})[port] = value
    majorities = {port: v for port, (v, _c, _o) in per_port.items()}
    same = len({_canon(v) for v in majorities.values()}) == 1
    title, owner = SETTINGS[key]
    agreeing = len(maps) - len(odd)
    return {"key": key, "title": title, "owner": owner, "majority": next(iter(majorities.values())) if same else majorities,
            "majority_nodes": agreeing, "nodes": len(maps), "split": agreeing * 2 <= len(maps) and bool(odd),
            "odd": {n: odd[n] for n in maps if n in odd}}


def by_fabric(records: dict[str, dict]) -> dict[str, dict[str, dict]]:
    """The records grouped by their node's fabric, in node order."""
    groups: dict[str, dict[str, dict]] = {}
    for node, record in records.items():
        groups.setdefault(str(record.get("settings", {}).get("fabric") or "unknown"), {})[node] = record
    return groups


def compare_settings(records: dict[str, dict]) -> list[dict]:
    """Every setting compared within one fabric: an InfiniBand node's MTU or HCA list is no model
    for a RoCE node's. A mixed fleet gets the fabric itself compared, then each fabric's settings
    (keys and titles name the fabric)."""
    groups = by_fabric(records)
    if len(groups) <= 1:
        return _compare_group(records)
    fabric_title, fabric_owner = SETTINGS["fabric"]
    out = [_entry("fabric", fabric_title, fabric_owner, {n: r["settings"].get("fabric") for n, r in records.items()})]
    for fabric, members in groups.items():
        for entry in _compare_group(members, skip={"fabric"}):
            entry.update(key=f"{entry['key']}[{fabric}]", title=f"{entry['title']} ({fabric} nodes)", fabric=fabric)
            out.append(entry)
    return out


def _compare_group(records: dict[str, dict], skip: frozenset | set = frozenset()) -> list[dict]:
    out = []
    for key, (title, owner) in SETTINGS.items():
        if key in skip:
            continue
        if key == "nccl_env":
            out += _env_entries(records, title, owner)
            continue
        values = {n: r["settings"][key] for n, r in records.items() if key in r.get("settings", {})}
        if values:
            out.append(_entry(key, title, owner, values))
        maps = {n: r["ports"][key] for n, r in records.items() if key in r.get("ports", {})}
        if maps:
            out.append(_port_entry(key, maps))
    return out


def _env_entries(records: dict[str, dict], title: str, owner: str) -> list[dict]:
    envs = {n: r["env"] for n, r in records.items() if r.get("env") is not None}
    names = sorted({name for env in envs.values() for name in env})
    return [_entry(f"nccl_env.{name}", f"{title}: {name}", owner, {n: env.get(name, UNSET) for n, env in envs.items()})
            for name in names]


def outliers(records: dict[str, dict]) -> list[dict]:
    """Nodes whose figure sits on the bad side, far from the fleet's median (modified z-score)."""
    found = []
    for members in by_fabric(records).values():  # an IB link rate is no median for a RoCE one
        found += _outliers(members)
    return found


def _outliers(records: dict[str, dict]) -> list[dict]:
    found = []
    for metric, (title, bad) in METRICS.items():
        values = {n: r["numbers"][metric] for n, r in records.items() if metric in r.get("numbers", {})}
        if len(values) < MIN_OUTLIER_NODES:
            continue
        median = statistics.median(values.values())
        mad = statistics.median(abs(v - median) for v in values.values())
        floor = max(ABS_FLOOR.get(metric, 0.0), REL_FLOOR * abs(median))
        for node, value in values.items():
            deviation = value - median
            if (deviation < 0) != (bad == "low") or abs(deviation) < floor or deviation == 0:
                continue
            if mad and 0.6745 * abs(deviation) / mad <= Z_LIMIT:
                continue
            ceiling = records[node].get("ceiling") or {} if metric == "busbw_gbs" else {}
            if ceiling.get("hardware") == "at_limit":  # all its own hardware carries: other hardware, no straggler
                continue
            found.append({"metric": metric, "title": title, "node": node, "value": value, "median": median,
                          "mad": mad, "direction": bad} | ({"ceiling": ceiling} if ceiling else {}))
    return found


def patterns(records: dict[str, dict]) -> list[dict]:
    """Pause on most RoCE nodes with no loss anywhere: a pause cascade. Loss on a minority of nodes:
    local to their ports; on most: fabric-wide. Pause and loss are the node runbooks' own checks
    (roce.pause_storm / roce.pause_rx: pause over 0.15 of the window per direction; roce.loss:
    transport loss or drops on NCCL's priority), read from each record's `checks`, so a fleet and a
    node never disagree on what pausing or losing means."""
    roce = {n: r["checks"] for n, r in records.items() if "loss" in (r.get("checks") or {})}
    if not roce:
        return []

    def said(checks: dict, name: str) -> bool:
        return (checks.get(name) or {}).get("outcome") == "yes"

    pausing = [n for n, c in roce.items() if said(c, "pause_tx") or said(c, "pause_rx")]
    lossy = {n: c["loss"].get("ports") or [] for n, c in roce.items() if said(c, "loss")}
    found: list[dict[str, Any]] = []
    if len(roce) >= 2 and len(pausing) * 2 > len(roce) and not lossy:
        def sent(n: str) -> float:  # the share of the window this node spent sending pause
            return ((roce[n].get("pause_tx") or {}).get("worst") or {}).get("pause_tx_fraction") or 0.0

        senders = sorted(roce, key=lambda n: -sent(n))[:3]
        found.append({"cause": "pfc_pause_storm", "scope": "fleet", "nodes": pausing, "senders": senders,
                      "summary": f"PFC pause takes over 15% of the window on {len(pausing)} of {len(roce)} RoCE "
                                 f"nodes and no node loses packets: a pause cascade. The nodes that spent the most "
                                 f"time sending pause: {', '.join(senders)}."})
    if lossy:
        fleet_wide = len(lossy) * 2 > len(roce)
        where = "most nodes: a fabric-wide lossy configuration" if fleet_wide else \
            "a few nodes only: the fault is local to their ports or their switch ports"
        found.append({"cause": "roce_packet_loss", "scope": "fleet" if fleet_wide else "local", "nodes": list(lossy),
                      "ports": lossy, "summary": f"Packets are lost on {len(lossy)} of {len(roce)} RoCE nodes, {where}."})
    return found


def compare(records: dict[str, dict]) -> Comparison:
    return Comparison(compare_settings(records), outliers(records), patterns(records))
