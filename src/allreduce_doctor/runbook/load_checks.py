"""Each node's counters under load, judged by the single-node runbooks' own checks.

Used by validate (each round's bundle) and the fleet (each node's pattern: a cascade is pause on
most nodes by roce.pause_storm / roce.pause_rx, with roce.loss on none). validate writes no
threshold of its own: a round's bundle is observed like any node's
(probes/derive_counters.py derives loss, pause time share per direction, CNP rates and the
xmit_wait share of link time) and the very checks of runbooks/roce.yaml and runbooks/ib.yaml
decide it (runbook.walk.decide), so `allreduce-doctor` on one node and `validate` across the
fleet can never disagree on what counts as loss, a pause storm, DCQCN at work or credit
back-pressure. Per node, a check counts as seen when it said yes in any round under load, and
as decided when some round said yes or no: a node whose every round left it unknown is unknown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from allreduce_doctor.errors import DoctorError

from .model import Check
from .walk import decide

if TYPE_CHECKING:
    from .conditions import Condition

# validate's name -> (the runbook check that decides it, the row values its evidence shows)
LOAD_CHECKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "loss": ("roce.loss", ("rdma_loss", "discards_ppm")),
    "pause_tx": ("roce.pause_storm", ("pause_tx_fraction", "storm_events")),
    "pause_rx": ("roce.pause_rx", ("pause_rx_fraction",)),
    "cnp": ("roce.congestion", ("cnp_sent_rate", "cnp_handled_rate")),
    "xmit_wait": ("ib.xmit_wait", ("xmit_wait_fraction",)),
}


def runbook_check(doctor, name: str) -> Check:
    key = LOAD_CHECKS[name][0]
    try:
        node = doctor.runbooks.node(key)
    except KeyError:
        node = None
    if not isinstance(node, Check):
        raise DoctorError(f"validate judges with the runbook check {key}, and the runbooks loaded have none")
    return node


def judge_bundle(obs, doctor, fabric: str | None) -> dict[str, dict]:
    """{check: {outcome, ports (the deciding ones), worst (each shown value's maximum over every
    port), reason (why unknown)}} for the checks of this node's fabric."""
    out = {}
    for name, (key, shown) in LOAD_CHECKS.items():
        if key.partition(".")[0] != fabric:
            continue
        node = runbook_check(doctor, name)
        decision = decide(node, obs, {})
        witnesses = decision.step.value if isinstance(decision.step.value, list) else []
        condition = cast("Condition", node.condition)  # a load check reads counters
        rows = [r for fact in sorted(condition.facts) for r in obs.rows(fact)]
        out[name] = {"outcome": decision.step.outcome,
                     "ports": [str(w.get("name")) for w in witnesses if isinstance(w, dict)] if decision.step.outcome == "yes" else [],
                     "worst": _worst(rows, shown), "reason": decision.reason}
    return out


def _worst(rows: list[dict], shown: tuple[str, ...]) -> dict[str, Any]:
    worst: dict[str, Any] = {}
    for value in shown:
        known = [r[value] for r in rows if isinstance(r.get(value), (int, float))]
        if known:
            worst[value] = max(known)
    return worst


def combine(rounds: list[dict[str, dict]]) -> dict[str, dict]:
    """One node's check results over its rounds under load: {check: {rounds (that judged it),
    seen (rounds that said yes), ports, worst, decided, reason}}."""
    out: dict[str, dict] = {}
    for checks in rounds:
        for name, got in checks.items():
            acc = out.setdefault(name, {"rounds": 0, "seen": 0, "ports": [], "worst": {}, "decided": False, "reason": ""})
            acc["rounds"] += 1
            acc["seen"] += got["outcome"] == "yes"
            acc["decided"] = acc["decided"] or got["outcome"] != "unknown"
            acc["ports"] += [p for p in got["ports"] if p not in acc["ports"]]
            for value, v in got["worst"].items():
                acc["worst"][value] = max(v, acc["worst"].get(value, v))
            if got["outcome"] == "unknown" and not acc["reason"]:
                acc["reason"] = got["reason"]
    return out
