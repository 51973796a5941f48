"""The fleet part of the text and Markdown reports: the node report (report.py) of the fleet
Diagnosis, followed by the nodes that gave no bundle, the settings that differ, the outliers and
each node's own verdict. JSON is report.py's unchanged (the `fleet` key carries all of it)."""

from __future__ import annotations

from allreduce_doctor.report import VERDICT_WORDS, render, setting_value
from allreduce_doctor.sanitize import fields
from allreduce_doctor.status import EVIDENCE_HEALTHY_HEADLINE, HEALTHY

MAX_NODES_SHOWN = 40  # longer fleets list only the nodes that are not healthy


def _nodes_shown(per_node: dict) -> list[str]:
    if len(per_node) <= MAX_NODES_SHOWN:
        return list(per_node)
    return [n for n, r in per_node.items() if r["verdict"] != HEALTHY][:MAX_NODES_SHOWN]


def fleet_text(d: dict) -> str:
    fleet = d["fleet"]
    per_node, unreachable = fleet["per_node"], fleet["nodes_unreachable"]
    gave = "" if fleet.get("pasted") else f"{len(unreachable)} gave no bundle, "  # pasted hosts: nothing collected
    out = ["", f"Fleet: {fleet['nodes_checked']} {'hosts pasted' if fleet.get('pasted') else 'nodes checked'}, {gave}"
           f"{len(fleet['nodes_affected'])} affected"]
    if unreachable:
        out.append("  No bundle from:")
        width = max(len(n) for n in unreachable)
        out += [f"    {node:<{width}}  {why}" for node, why in unreachable.items()]
    odd = [s for s in fleet["settings"] if s["odd"]]
    if odd:
        out.append("  Settings that differ (the majority, then the odd nodes):")
        for s in odd:
            split = ", no clear majority" if s.get("split") else ""
            out.append(f"    {s['key']}: {setting_value(s['majority'])} on {s['majority_nodes']} of {s['nodes']} nodes{split}")
            out += [f"        {node}: {setting_value(v)}" for node, v in s["odd"].items()]
    agree = len(fleet["settings"]) - len(odd)
    out.append(f"  {agree} setting{'s' if agree != 1 else ''} agree on every node.")
    if fleet["outliers"]:
        out.append("  Outliers (median and MAD):")
        out += [f"    {o['node']}: {o['title']} {o['value']:g} (fleet median {o['median']:g})" for o in fleet["outliers"]]
    shown = _nodes_shown(per_node)
    if shown:
        hidden = len(per_node) - len(shown)
        out.append("  Each node's own diagnosis" + (f" ({hidden} healthy nodes not listed)" if hidden else "") + ":")
        width = max(len(n) for n in shown)
        for node in shown:
            r = per_node[node]
            out.append(f"    {node:<{width}}  {r['verdict']:<12} {r['root_cause'] or ''}".rstrip())
    return "\n".join(out) + "\n"


def fleet_markdown(d: dict) -> str:
    fleet = d["fleet"]
    checked = f"{fleet['nodes_checked']} hosts pasted." if fleet.get("pasted") else \
        f"{fleet['nodes_checked']} nodes checked, {len(fleet['nodes_unreachable'])} gave no bundle."
    out = ["", "## Fleet", "", checked]
    if fleet["nodes_unreachable"]:
        out += ["", "| node | no bundle because |", "|---|---|"]
        out += [f"| {n} | {why.replace('|', '/')} |" for n, why in fleet["nodes_unreachable"].items()]
    odd = [s for s in fleet["settings"] if s["odd"]]
    if odd:
        out += ["", "| setting | majority | odd nodes |", "|---|---|---|"]
        for s in odd:
            nodes = "; ".join(f"{n}: {setting_value(v)}" for n, v in s["odd"].items()).replace("|", "/")
            majority = setting_value(s["majority"]).replace("|", "/")
            out.append(f"| {s['key']} | {majority} ({s['majority_nodes']} of {s['nodes']}) | {nodes} |")
    if fleet["outliers"]:
        out += ["", "| node | figure | value | fleet median |", "|---|---|---|---|"]
        out += [f"| {o['node']} | {o['title']} | {o['value']:g} | {o['median']:g} |" for o in fleet["outliers"]]
    shown = _nodes_shown(fleet["per_node"])
    if shown:
        out += ["", "| node | verdict | root cause |", "|---|---|---|"]
        out += [f"| {n} | {fleet['per_node'][n]['verdict']} | {fleet['per_node'][n]['root_cause'] or ''} |" for n in shown]
    return "\n".join(out) + "\n"


def render_fleet(d: dict, fmt: str) -> str:
    """report.render for the fleet Diagnosis, with the fleet section after it (text, markdown)."""
    base = render(d, fmt)
    if fmt == "json" or "fleet" not in d:
        return base
    d = fields(d)  # node names are file names: one line each, controls escaped
    # report.py speaks of one node; pasted hosts are text, not nodes read
    every = f"{EVIDENCE_HEALTHY_HEADLINE.upper()} OF ANY HOST:" if d["fleet"].get("pasted") else "NOTHING FOUND ON ANY NODE:"
    base = base.replace(f"{VERDICT_WORDS[HEALTHY]}:", every, 1)
    if fmt == "markdown":
        return base + fleet_markdown(d)
    return base.replace("\nFull evidence for every step:", fleet_text(d) + "\nFull evidence for every step:", 1) \
        if "\nFull evidence for every step:" in base else base + fleet_text(d)
