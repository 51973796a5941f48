"""Judge a validate run: busbw per size against the hardware, and every node's counters under load.

The result is a Diagnosis like any other (runbook/diagnosis.py; causes from the catalogue), so the
reports, exporters, tickets and the fleet view read it unchanged. Path steps are `validate.*`;
their outcome is "yes" when the problem is seen.

Loss, pause time (rx and tx apart), CNPs and InfiniBand xmit_wait are decided per node and round by
the single-node runbooks' own checks (runbook/load_checks.py): one rule for `allreduce-doctor` on a node
and for `validate`. Across the nodes, the pause victims and the transmit-pause root make the
cascade; stragglers are the fleet's median/MAD outliers (fleet/compare.py) of each node's peak.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from allreduce_doctor.busbw import SMALL_ONLY, above_note
from allreduce_doctor.domain import BUSBW_AT_LIMIT, busbw_verdict
from allreduce_doctor.fleet.compare import outliers
from allreduce_doctor.fleet.fleet_diagnosis import fold, listed
from allreduce_doctor.fleet.node_settings import METRICS
from allreduce_doctor.runbook.causes import CAUSES
from allreduce_doctor.runbook.diagnosis import Diagnosis, EvidenceRow, Finding, Step
from allreduce_doctor.runbook.load_checks import combine, runbook_check
from allreduce_doctor.status import FAULT, HEALTHY, INCONCLUSIVE, STEP_FAIL, STEP_PASS, STEP_UNKNOWN
from allreduce_doctor.validate import ceiling_sizes
from allreduce_doctor.validate.outputs import nccl_tests_run, perftest_gbits
from allreduce_doctor.validate.plan import Plan

ORDER = ("roce_packet_loss", "pfc_pause_storm", "straggler_node", "ib_congestion", "roce_congestion")


def _peak(rounds: list[dict]) -> tuple[dict[str, dict], dict[str, int]]:
    """Per node: the peak of each fleet figure and its runbook checks over the loaded rounds, and
    how many rounds it answered (a fault under load shows at its worst moment)."""
    peak: dict[str, dict] = {}
    checks: dict[str, list[dict]] = {}
    answered: Counter = Counter()
    for r in rounds:
        for node, fig in r["nodes"].items():
            answered[node] += 1
            got = peak.setdefault(node, {"numbers": {}, "fabric": fig.get("fabric")})
            for metric, value in fig["numbers"].items():
                got["numbers"][metric] = max(value, got["numbers"].get(metric, value))
            checks.setdefault(node, []).append(fig.get("checks") or {})
    for node, got in peak.items():
        got["checks"] = combine(checks[node])
    return peak, dict(answered)


class _Judge:
    def __init__(self, plan: Plan, rounds: list[dict], steps: list[dict], outputs: dict[int, str], doctor) -> None:
        self.plan, self.steps, self.outputs, self.doctor = plan, steps, outputs, doctor
        self.baseline = [r for r in rounds if r.get("step") is None]
        self.loaded = [r for r in rounds if r.get("step") is not None]
        self.peak, self.answered = _peak(self.loaded)
        self.d = Diagnosis(verdict=HEALTHY, runbooks=["validate"])
        self.found: dict[str, tuple[Finding, str, list[str]]] = {}  # cause -> (finding, summary, fix)

    # --- helpers ------------------------------------------------------------------------------
    def step(self, node: str, title: str, outcome: str, means: str, value: Any = None) -> None:
        badge = {"yes": STEP_FAIL, "no": STEP_PASS}.get(outcome, STEP_UNKNOWN)  # "yes": the problem is seen
        self.d.path.append(Step(node, "check", title, outcome, means, value, badge=badge))

    def evidence(self, step: str, fact: str, observed: Any, expected: str, source: str) -> None:
        self.d.evidence.append(EvidenceRow(step, fact, observed, expected, source, "ok"))

    def unsure(self, step: str, reason: str) -> None:
        self.d.inconclusive.append({"node": step, "reason": reason})

    def finding(self, cause: str, step: str, value: Any, summary: str, fix: list[str]) -> None:
        info = CAUSES[cause]
        self.found[cause] = (Finding(cause, info.title, info.severity, info.owner, step, value), summary, fix)

    def seen(self, name: str) -> tuple[list[str], dict[str, str]]:
        """(the nodes whose runbook check `name` said yes under load, {node: why it stayed unknown})."""
        yes, unknown = [], {}
        for node in self.judged(name):
            got = self.peak[node]["checks"][name]
            if got["seen"]:
                yes.append(node)
            elif not got["decided"]:
                unknown[node] = got["reason"] or "no round under load decided it"
        return yes, unknown

    def judged(self, name: str) -> list[str]:
        """The nodes, in plan order, whose fabric has the check `name`."""
        return [n for n in self.plan.nodes if name in (self.peak.get(n) or {}).get("checks", {})]

    def decided(self, step: str, title: str, yes: list[str], unknown: dict[str, str], means_yes: str,
                means_no: str) -> None:
        """The step of one or two runbook checks over every node; unknown nodes are inconclusive."""
        for node, why in unknown.items():
            self.unsure(step, f"{node}: {why}")
        outcome = "yes" if yes else "unknown" if unknown else "no"
        means = means_yes if yes else f"not measured on {listed(unknown)}" if unknown else means_no
        self.step(step, title, outcome, means, ({n: self.ports(n) for n in yes} if yes else None))

    def ports(self, node: str) -> list[str]:
        return sorted({p for got in self.peak[node]["checks"].values() if got["seen"] for p in got["ports"]})

    def check_rows(self, step: str, nodes: list[str], name: str) -> None:
        """An evidence row per node: the ports the runbook check named, its values at their worst."""
        check = runbook_check(self.doctor, name)
        for node in nodes[:8]:
            got = self.peak[node]["checks"][name]
            observed = {"node": node, "ports": got["ports"], **got["worst"],
                        "share": f"{got['seen']} of {got['rounds']} rounds under load"}
            self.evidence(step, check.key, observed, check.expected, f"{node}'s bundles of the rounds under load")

    # --- the checks, in path order ------------------------------------------------------------
    def launched(self) -> None:
        failed = [s for s in self.steps if s.get("rc") != 0]
        for s in failed:
            why = s.get("error") or ("stopped at the wall-clock cap" if s.get("timed_out") else f"exit {s.get('rc')}")
            self.unsure("validate.launch", f"{s['name']}: {why}")
        self.step("validate.launch", "Every benchmark ran to the end", "yes" if failed else "no",
                  f"{len(failed)} of {len(self.steps)} steps did not finish: " + "; ".join(
                      i["reason"] for i in self.d.inconclusive) if failed else f"all {len(self.steps)} steps finished")

    def sampled(self) -> None:
        gone = {}
        for node in self.plan.nodes:
            fails = [(r["index"], r["failed"][node]) for r in self.loaded if node in r["failed"]]
            if node not in self.answered:
                why = fails[0][1] if fails else "no round was taken while a benchmark ran"
                gone[node] = f"no sample under load ({why})"
            elif fails:
                gone[node] = f"gave no sample from round {fails[0][0]} on ({fails[0][1]})"
        for node, why in gone.items():
            self.unsure("validate.watch", f"{node}: {why}")
        self.step("validate.watch", "Every node was sampled while the benchmarks ran", "yes" if gone else "no",
                  "; ".join(f"{n}: {w}" for n, w in gone.items()) if gone else
                  f"{len(self.answered)} nodes, {len(self.loaded)} rounds under load", gone or None)

    def bandwidth(self) -> str:
        """Per size, busbw against the ceiling (NICs x line rate where the model knows no more); the verdict of the
        sizes from 32 MiB up, small_only when the run has none (they are latency-bound: busbw.SMALL_ONLY)."""
        figs = [f for r in self.baseline for f in r["nodes"].values()] or \
            [f for r in self.loaded for f in r["nodes"].values()]
        nics = Counter(f["nics"] for f in figs if f.get("nics")).most_common(1)
        line = Counter(f["line_gbps"] for f in figs if f.get("line_gbps")).most_common(1)
        expected = round(nics[0][0] * line[0][0] / 8.0, 2) if nics and line else None
        basis = (f"{nics[0][0]} NICs per node x {line[0][0]:g} Gb/s / 8 = {expected:g} GB/s; at the limit from "
                 f"{BUSBW_AT_LIMIT:.0%} of it (domain.BUSBW_AT_LIMIT: the protocol's headers)") if expected else \
            "unknown: no node reported its NICs' rates"
        verdicts = {}
        for index, s in enumerate(self.steps):
            if s["name"] == "incast":
                if s["argv"][-1] not in self.plan.nodes:  # a server: its client reports the same transfer
                    continue
                gbits = perftest_gbits(self.outputs.get(index, ""))
                self.evidence("validate.busbw", f"incast to {s['argv'][-1]}", {"average_gbits": gbits},
                              f"near {line[0][0]:g} Gb/s" if line else "near the line rate", s.get("output") or "")
                continue
            run = nccl_tests_run(self.outputs.get(index, ""), s.get("output") or s["name"])
            if run is None:
                continue
            model = ceiling_sizes.assess(run, figs, len(self.plan.nodes), self.plan.ranks_per_node) \
                if s["name"] == "all_reduce_perf" else {}
            for row in run["table"]:
                busbw = max(h["busbw"] for h in (row["out_of_place"], row["in_place"]) if h)
                ratio, _ = busbw_verdict(busbw, expected)
                judged, against = ceiling_sizes.row(row["size"], busbw, model) if model else (None, None)
                self.evidence("validate.busbw", f"{s['name']} busbw at {row['size']} B",
                              {"busbw_gbs": busbw, "ratio": ratio} | ({"ceiling": judged} if model else {}),
                              against or (f"{expected:g} GB/s" if expected else "unknown"), s.get("output") or "")
            for failure in run["failures"]:
                self.unsure("validate.busbw", f"{s['name']}: {failure}")
            ratio, verdict = busbw_verdict(run["peak_busbw_large"], expected)
            verdicts[s["name"]] = {"peak_busbw_gbs": run["peak_busbw_large"], "expected_gbs": expected, "ratio": ratio,
                                   "verdict": verdict}
            if s["name"] == "all_reduce_perf":  # above the NICs' rate: never a fault, and why (busbw.above_note)
                verdicts[s["name"]] |= above_note(ratio, run.get("nodes") or len(self.plan.nodes), None)
                verdicts[s["name"]] |= {"ceiling_gbs": model["ceiling_gbs"], "hardware": model["hardware"],
                                        "hardware_note": model["note"]}
                if model["hardware"] in ("at_limit", "below"):  # the model knows more: PCIe slots, the node's links
                    verdicts[s["name"]]["verdict"] = model["hardware"]
                elif model["note"] == SMALL_ONLY:  # latency-bound sizes only: no bandwidth verdict, NICs' rate or not
                    verdicts[s["name"]]["verdict"] = "small_only"
        main = verdicts.get("all_reduce_perf", {"verdict": "unmeasured"})
        outcome = {"at_limit": "no", "below": "yes"}.get(main["verdict"], "unknown")
        self.step("validate.busbw", "No all_reduce_perf busbw shortfall against the hardware's ceiling", outcome,
                  f"{main['verdict']}: peak {main.get('peak_busbw_gbs')} GB/s against {basis}"
                  + (f"; {main['note']}" if main.get("note") else "")
                  + (f"; against the ceiling: {main['hardware_note']}" if main.get("hardware_note") else ""),
                  verdicts or None)
        return main["verdict"]

    def flow(self) -> None:
        roce = self.judged("loss")
        if not roce:  # no RoCE node: PFC, pause and DCQCN do not apply
            return
        lossy, unknown = self.seen("loss")
        self.decided("validate.loss", "No packet loss under load", lossy, unknown,
                     f"transport loss or drops on NCCL's priority on {listed(lossy)}",
                     "transport loss and drops on NCCL's priority stayed within the runbook's limit")
        if lossy:
            ports = {n: self.peak[n]["checks"]["loss"]["ports"] for n in lossy}
            where = "most nodes: a fabric-wide lossy configuration" if len(lossy) * 2 > len(roce) else \
                "a few nodes only: the fault is local to their ports or their switch ports"
            self.check_rows("validate.loss", lossy, "loss")
            self.finding("roce_packet_loss", "validate.loss", {"nodes": lossy, "ports": ports},
                         f"Packets are lost on {len(lossy)} of {len(roce)} RoCE nodes, {where}. Loss under load "
                         "collapses RoCE throughput (go-back-N retransmission).",
                         [f"Check PFC on the RoCE priority and the switch buffer drops on the ports of {listed(lossy)}."])
        storm = self.pause(roce, bool(lossy))
        if lossy or storm:
            return
        self.congestion("cnp", "validate.dcqcn", "DCQCN reacts to congestion without loss or storm",
                        "CNPs over the runbook's limit on a port of {nodes}, nothing lost", "congestion notifications stayed low",
                        "roce_congestion")

    def congestion(self, name: str, step: str, title: str, means_yes: str, means_no: str, cause: str) -> None:
        """A congested but lossless fabric (minor): the nodes where the runbook check `name` said yes."""
        found, unknown = self.seen(name)
        self.decided(step, title, found, unknown, means_yes.format(nodes=listed(found)), means_no)
        if found:
            self.check_rows(step, found, name)
            self.finding(cause, step, {"nodes": found}, CAUSES[cause].summary.strip(), [])

    def pause(self, roce: list[str], lossy: bool) -> bool:
        """Transmit pause (the node cannot drain: a root) and receive pause (the fabric holds it:
        a victim), each by its runbook check; paused on most nodes with no loss is a cascade."""
        senders, tx_unknown = self.seen("pause_tx")
        victims, rx_unknown = self.seen("pause_rx")
        pausing = [n for n in roce if n in senders or n in victims]
        unknown = {n: why for n, why in {**tx_unknown, **rx_unknown}.items() if n not in pausing}
        self.decided("validate.pause", "No PFC pause storm or cascade under load", pausing, unknown,
                     f"NCCL's priority paused beyond the runbooks' limit on {listed(pausing)}",
                     "pause time stayed within the runbooks' limit on every node")
        if not pausing:
            return False
        tx_share = {n: self.peak[n]["checks"]["pause_tx"]["worst"].get("pause_tx_fraction") for n in self.judged("pause_tx")}
        root = max(senders or roce, key=lambda n: tx_share.get(n) or 0)  # the most transmit pause: it cannot drain
        cascade = ", and no node loses packets: a pause cascade" if len(pausing) * 2 > len(roce) and not lossy else ""
        share = f" (transmit pause {tx_share[root]:.1%} of the time)" if tx_share.get(root) is not None else ""
        self.check_rows("validate.pause", senders, "pause_tx")
        self.check_rows("validate.pause", victims, "pause_rx")
        self.finding("pfc_pause_storm", "validate.pause", {"nodes": pausing, "root": root},
                     f"PFC holds NCCL's priority paused beyond the runbooks' limit on {len(pausing)} of {len(roce)} "
                     f"RoCE nodes{cascade}. The root is most likely {root}: it pauses its peers the most{share}.",
                     [f"Find why {root} cannot drain its receive buffer (a slow receiver: PCIe, host memory, a "
                      "mismatched buffer setting) before tuning the switches."])
        return True

    def credits(self) -> None:
        if not self.judged("xmit_wait"):
            return
        self.congestion("xmit_wait", "validate.credits", "No credit back-pressure on InfiniBand under load",
                        "port_xmit_wait over the runbook's share of link time on {nodes}",
                        "port_xmit_wait stayed within the runbook's share of link time", "ib_congestion")

    def stragglers(self) -> None:
        title = "No node is off its peers under load (median and MAD)"
        if len(self.peak) < 3:
            self.step("validate.stragglers", title, "unknown", "fewer than three nodes sampled: no median to compare with")
            return
        explained = {c: set((self.found[c][0].value or {}).get("nodes") or []) for c in self.found}
        odd = [o for o in outliers({n: {"numbers": p["numbers"]} for n, p in self.peak.items()})
               if not any(o["node"] in nodes for nodes in explained.values())]
        by_node: dict[str, list[str]] = {}
        for o in odd:
            by_node.setdefault(o["node"], []).append(f"{METRICS[o['metric']][0]} {o['value']:g} (median {o['median']:g})")
            self.evidence("validate.stragglers", o["metric"], {"node": o["node"], "counter": o["metric"],
                          "rate": o["value"]}, f"near the median {o['median']:g} (MAD {o['mad']:g})", "rounds under load")
        means = "; ".join(f"{n}: {', '.join(v)}" for n, v in by_node.items())
        self.step("validate.stragglers", title, "yes" if by_node else "no", means or "every node sits near the median", by_node or None)
        if by_node:
            self.finding("straggler_node", "validate.stragglers", {"nodes": list(by_node)},
                         f"{listed(by_node)} {'is' if len(by_node) == 1 else 'are'} measurably off the others under load: "
                         f"{means}. Every collective waits for the slowest rank.",
                         [f"Drain {listed(by_node)} and diagnose it alone (allreduce-doctor on that node)."])

    def finish(self, busbw: str, context: dict) -> dict:
        for cause in sorted(self.found, key=ORDER.index):
            finding, summary, fix = self.found[cause]
            self.d.findings.append(finding)
            self.d.remediation += [{"step": text, "owner": finding.owner} for text in fix]
            self.d.remediation += [{"step": text, "owner": finding.owner} for text in CAUSES[cause].remediation]
            self.d.verification += [v for v in CAUSES[cause].verification if v not in self.d.verification]
            if self.d.root_cause is None:
                self.d.root_cause = {"id": cause, "title": finding.title, "severity": finding.severity,
                                     "owner": finding.owner, "summary": summary, "node": finding.node}
        if self.d.findings:
            self.d.verdict = FAULT
            self.d.verification.append("allreduce-doctor validate again: loss and pause counters flat, busbw at the limit")
        elif busbw == "at_limit" and not self.d.inconclusive:
            info = CAUSES["expected_hardware_limit"]
            self.d.healthy = {"id": info.id, "title": info.title, "summary": info.summary.strip(),
                              "next_steps": list(info.next_steps), "node": "validate.busbw"}
        else:
            self.d.verdict = INCONCLUSIVE
            if busbw == "below":
                self.unsure("validate.busbw", "busbw is below the hardware's ceiling but no counter shows loss, pauses "
                            "or congestion: diagnose each node alone (allreduce-doctor fleet) and check NCCL's transport")
            elif busbw == "small_only":
                self.unsure("validate.busbw", f"all_reduce_perf: {SMALL_ONLY}")
            elif busbw != "at_limit":
                self.unsure("validate.busbw", "no all_reduce_perf result to compare with the hardware")
        self.d.context = {"host": fold(self.plan.nodes), "fabric": _fabric(self.peak), **context}
        data = self.d.to_dict()
        affected = {n for f in self.d.findings for n in ((f.value or {}).get("nodes") or [])}
        data["fleet"] = {"nodes_checked": len(self.answered), "nodes_affected": [n for n in self.plan.nodes if n in affected],
                         "settings": [], "outliers": [], "patterns": [], "per_node": {}}  # what exporters read of a fleet
        data["validate"] = {"plan": self.plan.to_dict(), "rounds_under_load": len(self.loaded),
                            "nodes_sampled": sorted(self.answered), "steps": self.steps}
        return data


def _fabric(peak: dict[str, dict]) -> str | None:
    fabrics = {p.get("fabric") for p in peak.values()} - {None}
    return fabrics.pop() if len(fabrics) == 1 else ("mixed" if fabrics else None)


def judge(plan: Plan, rounds: list[dict], steps: list[dict], outputs: dict[int, str], context: dict, doctor) -> dict:
    """The Diagnosis of one validate run, as JSON-ready data (see the module docstring)."""
    j = _Judge(plan, rounds, steps, outputs, doctor)
    j.launched()
    j.sampled()
    busbw = j.bandwidth()
    j.flow()
    j.credits()
    j.stragglers()
    return j.finish(busbw, context)
