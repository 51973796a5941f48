"""The fleet's Diagnosis: the same JSON as one node's (verdict, root_cause, findings, path,
evidence, remediation, verification, inconclusive, context), so every report and exporter reads
it unchanged, plus a `fleet` key with the comparison and each node's own verdict.

Findings, most telling first: a fleet-wide pattern (pause cascade, loss on most nodes), setting
mismatches, loss local to a few nodes, stragglers, then the causes the nodes found on their own.
The path's steps are fleet checks, ids `fleet.*`; their outcome is "yes" when the problem is seen.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from allreduce_doctor.fleet.compare import Comparison, compare
from allreduce_doctor.fleet.node_settings import METRICS
from allreduce_doctor.runbook import causes
from allreduce_doctor.runbook.diagnosis import Diagnosis, EvidenceRow, Finding, Step
from allreduce_doctor.status import FAULT, HEALTHY, INCONCLUSIVE, NOT_APPLICABLE, STEP_FAIL, STEP_PASS, STEP_UNKNOWN

SEVERITY_ORDER = {"critical": 0, "major": 1, "minor": 2}
MAX_LISTED = 8
# Finding order, root cause first: what only the fleet shows, then the specific before the generic
# (loss on a node's ports says more than "that node is an outlier"), then what nodes found alone.
RANK_PATTERN, RANK_SETTINGS, RANK_LOCAL, RANK_OUTLIERS, RANK_NODES = range(5)  # nodes named in one line of text
VERIFY = [
    "allreduce-doctor fleet again: no setting differs, no node is an outlier",
    "all_reduce_perf over every node of the job: busbw near NICs x line rate, pause and loss counters flat",
]
VERIFY_PASTED = "allreduce-doctor diagnose --evidence over each host's outputs again: no host finds a cause, no setting differs"
NEXT_STEPS = [
    "Validate the fabric under load with a collective as large as the job (all_reduce_perf over every node) "
    "while watching pause and ECN counters: a two-node test does not congest the fabric.",
]


def listed(nodes) -> str:
    nodes = list(nodes)
    more = f" and {len(nodes) - MAX_LISTED} more" if len(nodes) > MAX_LISTED else ""
    return ", ".join(nodes[:MAX_LISTED]) + more


def fold(nodes) -> str:
    """gpu[01-04] when ClusterShell is there, else the names joined by commas."""
    nodes = list(nodes)
    try:
        from ClusterShell.NodeSet import NodeSet

        return str(NodeSet.fromlist(nodes)) if nodes else ""
    except Exception:  # noqa: BLE001 - folding is cosmetic: a name it cannot parse keeps the plain list
        return ",".join(nodes)


def _bring(s: dict) -> str:
    if s["split"]:  # no majority to follow: someone has to pick the right value
        return (f"{s['title']} has no clear majority ({s['majority_nodes']} of {s['nodes']} nodes share the most common "
                f"value, {s['majority']}): decide the right value and set it on every node.")
    return f"Bring {listed(s['odd'])} to the fleet's {s['title']}: {s['majority']}."


def _ceiling_words(ceiling: dict | None) -> str:
    """', below its ceiling of about N GB/s (NVLink (NVLS))' for a busbw outlier (job.ceiling), '' else."""
    if not ceiling:
        return ""
    if ceiling.get("hardware") == "below" and ceiling.get("ceiling_gbs"):
        return f", below its ceiling of about {ceiling['ceiling_gbs']:g} GB/s ({ceiling.get('limit')})"
    if ceiling.get("hardware") == "above_hardware":
        return ", above what its hardware can carry: a measurement that cannot be"
    return "; its ceiling is not known"


# Where a node's own diagnosis (its evidence) is read: a bundle's, or a pasted host's (fleet/pasted.py).
DRILL = {False: "Each node's diagnosis has the evidence (allreduce-doctor diagnose --snapshot NODE.tar.gz).",
         True: "Each host's own diagnosis has the evidence (diagnose --evidence: after the fleet report; JSON: hosts)."}


class _Builder:
    def __init__(self, results: dict[str, dict], unreachable: dict[str, str], pasted: bool = False) -> None:
        self.pasted = pasted  # pasted hosts: their own causes rank first (the worst host's is the root cause)
        self.ok = {n: r for n, r in results.items() if "error" not in r}
        self.unreachable = dict(unreachable)
        self.unreachable.update({n: r["error"] for n, r in results.items() if "error" in r})
        self.comparison: Comparison = compare({n: r["record"] for n, r in self.ok.items()})
        self.d = Diagnosis(verdict=HEALTHY, runbooks=["fleet"])
        self.affected: set[str] = set()
        self.pending: list[tuple[int, Finding, str, list]] = []  # (rank, finding, summary, fix)
        self.nodes_of: dict[str, list[str]] = {}  # cause -> the nodes its findings name

    def finding(self, rank: int, cause: str, severity: str, owner: str, step: str, value: Any, summary: str,
                nodes, fix: list[tuple[str, str]]) -> None:
        """Record a finding; `rank` orders them (lowest first: the root cause)."""
        catalogue = causes.load_catalogue()  # at use, after the Doctor took it from its cache
        title = catalogue[cause].title if cause in catalogue else cause
        self.pending.append((rank, Finding(cause, title, severity, owner, step, value), summary, fix))
        self.affected.update(nodes)
        self.nodes_of[cause] = list(dict.fromkeys([*self.nodes_of.get(cause, []), *nodes]))

    def step(self, node: str, title: str, outcome: str, means: str, value: Any = None) -> None:
        """A fleet check: "yes" is the problem seen (module docstring), so its badge is FAIL whether or
        not its finding is the root cause; every renderer reads the badge (report.step_badge)."""
        badge = {"yes": STEP_FAIL, "no": STEP_PASS}.get(outcome, STEP_UNKNOWN)
        self.d.path.append(Step(node, "check", title, outcome, means, value, badge=badge))

    def evidence(self, step: str, fact: str, observed: Any, expected: str, source: str) -> None:
        self.d.evidence.append(EvidenceRow(step, fact, observed, expected, source, "ok"))

    # --- the checks, in path order ------------------------------------------------------------
    def collected(self) -> None:
        n = len(self.ok) + len(self.unreachable)
        if self.unreachable:
            self.step("fleet.collect", "Every node gave its bundle", "unknown",
                      f"{len(self.unreachable)} of {n} nodes gave no bundle: {listed(self.unreachable)}", self.unreachable)
            self.d.inconclusive += [{"node": "fleet.collect", "reason": f"{node}: {why}"} for node, why in self.unreachable.items()]
        else:
            self.step("fleet.collect", "Every node gave its bundle", "no", f"all {n} nodes answered" if n > 1 else "the node answered")

    def flow(self) -> None:
        """The two counter checks, when some node sampled RoCE counters."""
        if not any("pause_rate" in r["record"]["numbers"] for r in self.ok.values()):
            return
        found = {p["cause"]: p for p in self.comparison.patterns}
        for cause, step, title, quiet in (
                ("pfc_pause_storm", "fleet.pause", "No PFC pause cascade across the fleet", "pause frames are not rising on most nodes"),
                ("roce_packet_loss", "fleet.loss", "No packet loss on the RoCE nodes", "no node lost packets between the samples")):
            pattern = found.get(cause)
            if pattern is None:
                self.step(step, title, "no", quiet)
                continue
            nodes = pattern["nodes"]
            value = {"nodes": nodes, **{k: pattern[k] for k in ("senders", "ports") if k in pattern}}
            self.step(step, title, "yes", pattern["summary"], value)
            self.evidence(step, "roce.counters", {n: self.ok[n]["record"]["numbers"] for n in nodes[:MAX_LISTED]},
                          "pause and loss counters flat", f"counter samples of {len(nodes)} nodes")
            if cause == "pfc_pause_storm":
                fix = [("Find the slow receiver: start with the nodes sending the most pause frames "
                        f"({listed(pattern['senders'])}).", "network"),
                       ("Check that ECN marking thresholds sit below the PFC xoff threshold on every switch.", "network")]
            elif pattern["scope"] == "fleet":
                fix = [("The fabric drops packets nearly everywhere: check PFC and ECN on every switch hop "
                        "and the switch buffer drops.", "network")]
            else:
                where = "; ".join(f"{n}: {', '.join(p)}" for n, p in list(pattern["ports"].items())[:MAX_LISTED])
                fix = [(f"Check the links and switch ports of the lossy ports ({where}): cable, optic, switch buffer drops.", "network")]
            rank = RANK_PATTERN if pattern["scope"] == "fleet" else RANK_LOCAL
            self.finding(rank, cause, "critical", "network", step, value, pattern["summary"], nodes, fix)

    def settings(self) -> None:
        odd = self.comparison.mismatched
        if len(self.ok) < 2:
            self.step("fleet.settings", "Every setting agrees across the nodes", "unknown", "fewer than two nodes to compare")
            return
        if not odd:
            self.step("fleet.settings", "Every setting agrees across the nodes", "no",
                      f"{len(self.comparison.settings)} settings agree on all {len(self.ok)} nodes")
            return
        value = {s["key"]: s["odd"] for s in odd}
        nodes = sorted({n for s in odd for n in s["odd"]}, key=list(self.ok).index)
        means = "; ".join(f"{s['key']} differs on {listed(s['odd'])}" for s in odd[:MAX_LISTED])
        self.step("fleet.settings", "Every setting agrees across the nodes", "yes", means, value)
        for s in odd:
            self.evidence("fleet.settings", s["key"], s["odd"], f"{s['majority']} (on {s['majority_nodes']} of {s['nodes']} nodes)",
                          f"fleet comparison of {s['nodes']} nodes")
        owner = odd[0]["owner"]
        severity = "critical" if any(s["owner"] == "network" or s["key"].startswith("nccl_env.") for s in odd) else "major"
        summary = (f"{len(odd)} setting{'s' if len(odd) > 1 else ''} differ{'' if len(odd) > 1 else 's'} between the nodes: {means}. "
                   "One node with a different setting is enough to make every collective of the job lossy or slow.")
        fix = [(_bring(s), s["owner"]) for s in odd[:MAX_LISTED]]
        self.finding(RANK_SETTINGS, "setting_mismatch", severity, owner, "fleet.settings", value, summary, nodes, fix)

    def outliers(self) -> None:
        found = self.comparison.outliers
        title = "No node is a numeric outlier (median and MAD)"
        if len(self.ok) < 3:
            self.step("fleet.outliers", title, "unknown", "fewer than three nodes: no median to compare with")
            return
        if not found:
            self.step("fleet.outliers", title, "no", "every node's link rates and counter rates sit near the fleet's median")
            return
        by_node: dict[str, list[str]] = {}
        for o in found:
            by_node.setdefault(o["node"], []).append(f"{METRICS[o['metric']][0]} {o['value']:g} (fleet median "
                                                     f"{o['median']:g}{_ceiling_words(o.get('ceiling'))})")
        means = "; ".join(f"{n}: {', '.join(v)}" for n, v in list(by_node.items())[:MAX_LISTED])
        self.step("fleet.outliers", title, "yes", means, by_node)
        for metric in dict.fromkeys(o["metric"] for o in found):
            rows = [o for o in found if o["metric"] == metric]
            self.evidence("fleet.outliers", metric, {o["node"]: o["value"] for o in rows},
                          f"near the fleet median {rows[0]['median']:g} (MAD {rows[0]['mad']:g})",
                          f"fleet comparison, {METRICS[metric][0]}")
        fix = [(f"Drain {listed(by_node)} and diagnose each alone. {DRILL[self.pasted]}", "host")]
        self.finding(RANK_OUTLIERS, "straggler_node", "major", "host", "fleet.outliers", by_node,
                     f"{len(by_node)} node{'s are' if len(by_node) > 1 else ' is'} measurably off the fleet: {means}.", list(by_node), fix)

    def node_causes(self) -> None:
        faults = {n: r["root_cause"] for n, r in self.ok.items() if r["verdict"] == FAULT and r.get("root_cause")}
        counts = Counter(c["id"] for c in faults.values())
        title = "Every node's own diagnosis finds nothing"
        if not self.ok:  # nothing was diagnosed: no node proves anything, so this check did not pass
            self.step("fleet.nodes", title, "unknown", "no node could be diagnosed")
            self.d.inconclusive.append({"node": "fleet.nodes", "reason": "no node gave a bundle that could be diagnosed"})
        elif not faults:
            unsure = sum(r["verdict"] == INCONCLUSIVE for r in self.ok.values())
            if unsure == len(self.ok):  # found nothing, but decided nothing either: not a pass
                self.step("fleet.nodes", title, "unknown", f"every one of the {len(self.ok)} nodes' own diagnoses is inconclusive")
            else:
                self.step("fleet.nodes", title, "no", f"no fault on any of the {len(self.ok)} nodes checked"
                          + (f" ({unsure} of them inconclusive)" if unsure else ""))
        else:
            self.step("fleet.nodes", title, "yes", "; ".join(f"{c} on {n} node{'s' if n > 1 else ''}" for c, n in counts.most_common()),
                      {n: c["id"] for n, c in faults.items()})
        order = [cause for cause, _count in counts.most_common()]
        if self.pasted:  # the worst host's cause first: the most severe, then the first in paste order
            order.sort(key=lambda c: min((SEVERITY_ORDER.get(f.get("severity"), 3), i) for i, f in enumerate(faults.values())
                                         if f["id"] == c))
        for rank, cause in enumerate(order, RANK_PATTERN - len(order) if self.pasted else RANK_NODES):
            nodes = [n for n, c in faults.items() if c["id"] == cause]
            first = faults[nodes[0]]
            severity = min((faults[n].get("severity") or "major" for n in nodes), key=lambda s: SEVERITY_ORDER.get(s, 3))
            self.evidence("fleet.nodes", f"root cause {cause}", nodes, "no fault", "each node's own diagnosis")
            steps = self.ok[nodes[0]].get("remediation") or []
            fix = [(f"{listed(nodes)}: {s['step']}", s.get("owner", first.get("owner"))) for s in steps[:1]]
            summary = f"{len(nodes)} of {len(self.ok)} nodes find {cause} on their own: {listed(nodes)}. {DRILL[self.pasted]}"
            self.finding(rank, cause, severity, first.get("owner") or "", "fleet.nodes", {"nodes": nodes}, summary, nodes, fix)
        for node, r in self.ok.items():
            if r["verdict"] == INCONCLUSIVE:
                self.d.inconclusive.append({"node": "fleet.nodes", "reason": f"{node}: its own diagnosis is inconclusive"})

    def finish(self, context: dict) -> dict:
        for _rank, finding, summary, fix in sorted(self.pending, key=lambda p: p[0]):
            self.d.remediation += [{"step": text, "owner": who} for text, who in fix]
            if any(f.cause == finding.cause for f in self.d.findings):  # a node's own cause the fleet named already
                continue
            self.d.findings.append(finding)
            if not self.d.root_cause:
                self.d.root_cause = {"id": finding.cause, "title": finding.title, "severity": finding.severity,
                                     "owner": finding.owner, "summary": summary, "node": finding.node}
        if self.d.findings:
            self.d.verdict = FAULT
            self.d.verification = [VERIFY_PASTED, *VERIFY[1:]] if self.pasted else list(VERIFY)
        elif self.d.inconclusive or not self.ok:
            self.d.verdict = INCONCLUSIVE
        elif all(r["verdict"] == NOT_APPLICABLE for r in self.ok.values()):  # no GPUs, no RDMA anywhere
            self.d.verdict = NOT_APPLICABLE
        else:
            self.d.healthy = {"id": "no_fault_found", "title": "nothing found on any node",
                              "summary": f"Each of the {len(self.ok)} nodes is healthy on its own and their settings agree.",
                              "next_steps": list(NEXT_STEPS), "node": "fleet.nodes"}
        hosts: dict[str, list[str]] = {}
        for node, r in self.ok.items():
            if r.get("host"):
                hosts.setdefault(r["host"], []).append(node)
        self.d.warnings += [f"host {host} is in {len(nodes)} bundles ({', '.join(nodes)}): the same node collected "
                            "twice, or nodes sharing a hostname; its settings count more than once"
                            for host, nodes in hosts.items() if len(nodes) > 1]
        kernels = Counter(r["record"]["settings"].get("kernel") for r in self.ok.values())
        fabrics = Counter(r["record"]["settings"].get("fabric") for r in self.ok.values())
        self.d.context = {"host": fold([*self.ok, *self.unreachable]), "kernel": kernels.most_common(1)[0][0] if kernels else None,
                          "fabric": fabrics.most_common(1)[0][0] if len(fabrics) == 1 else "mixed" if fabrics else None,
                          **context}
        data = self.d.to_dict()
        data["fleet"] = {
            "nodes_checked": len(self.ok),
            "nodes_unreachable": self.unreachable,
            "nodes_affected": [n for n in self.ok if n in self.affected],
            "settings": self.comparison.settings,
            "outliers": self.comparison.outliers,
            "patterns": self.comparison.patterns,
            "per_node": {n: {"verdict": r["verdict"], "root_cause": (r.get("root_cause") or {}).get("id"), "host": r.get("host")}
                         for n, r in self.ok.items()},
        }
        for finding in data["findings"]:  # each finding names its hosts: a ticket's title names the cause's own
            finding["hosts"] = self.nodes_of.get(finding["cause"], [])
        if self.pasted:
            data["fleet"]["pasted"] = True  # nothing was collected: no node can have failed to give its bundle
        return data


def fleet_diagnosis(results: dict[str, dict], unreachable: dict[str, str], context: dict, pasted: bool = False) -> dict:
    """The fleet Diagnosis as JSON-ready data (see the module docstring). `pasted`: the nodes are the
    hosts of one paste (nothing was collected; their own causes come first, the most severe first)."""
    b = _Builder(results, unreachable, pasted)
    if not pasted:
        b.collected()
    b.flow()
    b.settings()
    b.outliers()
    b.node_causes()
    return b.finish(context)
