"""The fleet screen's rows from the fleet Diagnosis's `fleet` key (no Textual here): one row per
compared setting (the settings that differ first), and one row per node with its own verdict,
root cause and the fleet findings that name it."""

from __future__ import annotations

from dataclasses import dataclass

from allreduce_doctor.report import VERDICT_WORDS, short
from allreduce_doctor.report import setting_value as shown_value
from allreduce_doctor.status import HEALTHY

MAJORITY_WIDTH = 16  # the odd nodes come first and must stay on an 80-column screen
ODD_WIDTH = 40


@dataclass
class SettingRow:
    key: str
    majority: str  # the value, then "(3/4)" or "(2/4, split)"
    odd: list[tuple[str, str]]  # (node, its value), in node order


@dataclass
class NodeRow:
    node: str
    verdict: str  # fault | healthy | inconclusive | no bundle
    cause: str  # the node's own root cause id, or why it gave no bundle
    named_by: list[str]  # fleet settings and outlier metrics that name this node


def setting_rows(fleet: dict) -> list[SettingRow]:
    rows = []
    for s in fleet["settings"]:
        split = ", split" if s.get("split") else ""
        majority = f"{short(shown_value(s['majority']), MAJORITY_WIDTH)} ({s['majority_nodes']}/{s['nodes']}{split})"
        rows.append(SettingRow(s["key"], majority, [(n, short(shown_value(v), ODD_WIDTH)) for n, v in s["odd"].items()]))
    return sorted(rows, key=lambda r: not r.odd)  # stable: the differing ones first, each group in its order


def node_rows(fleet: dict) -> list[NodeRow]:
    named: dict[str, list[str]] = {}
    for s in fleet["settings"]:
        for node in s["odd"]:
            named.setdefault(node, []).append(s["key"])
    for o in fleet["outliers"]:
        named.setdefault(o["node"], []).append(o["metric"])
    rows = [NodeRow(node, r["verdict"], r.get("root_cause") or "", named.get(node, []))
            for node, r in fleet["per_node"].items()]
    rows += [NodeRow(node, "no bundle", why, []) for node, why in fleet["nodes_unreachable"].items()]
    return rows


def fleet_title(data: dict) -> str:
    """'FAULT FOUND: setting_mismatch · 4 nodes checked, 2 affected' (plain; the nodes that gave
    no bundle are counted only when there are some, so the line fits 80 columns)."""
    fleet = data["fleet"]
    cause = (data.get("root_cause") or data.get("healthy") or {}).get("id") or ""
    head = "NOTHING FOUND" if data["verdict"] == HEALTHY else VERDICT_WORDS.get(data["verdict"], data["verdict"])
    lost = len(fleet["nodes_unreachable"])
    return (f"{head}{': ' + cause if cause else ''} · {fleet['nodes_checked']} nodes checked, "
            + (f"{lost} gave no bundle, " if lost else "") + f"{len(fleet['nodes_affected'])} affected")
