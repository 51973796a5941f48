"""Walk a RunbookSet over a node's observations and build the Diagnosis.

From the root runbook's entry, each check is evaluated (three-valued) and each question is
answered from `answers` (unknown when absent or not a listed choice); the outcome's `next`
leads on until a leaf; a healthy end of a runbook that declares `rejoin:` first runs the stretch
of another runbook it names (Runbook.rejoin), then ends at that leaf. Then the SWEEP: every other check of the runbooks the path entered
whose yes/no outcome leads straight to a cause leaf is evaluated; each that lands on one is a
secondary finding (one per cause id, never the primary's). Unknown outcomes of swept checks
are not findings: missing evidence proves nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from ..errors import RunbookError
from ..observations import OK, Observation
from ..status import FAULT, HEALTHY, INCONCLUSIVE, NOT_APPLICABLE, STEP_FAIL, STEP_NA, STEP_PASS, STEP_UNKNOWN, VERDICT_HEADLINE
from .cond_ast import walk_var_attrs
from .cond_eval import FactSource
from .conditions import evaluate
from .diagnosis import Diagnosis, EvidenceRow, Finding, Step, json_safe
from .model import CauseLeaf, Check, HealthyLeaf, Node, Question, RunbookSet
from .tristate import UNKNOWN


@dataclass
class _Decision:
    step: Step
    evidence: list[EvidenceRow] = field(default_factory=list)
    reason: str = ""  # why the outcome is unknown


class _SafeOnce:
    """json_safe of each fact value once per walk: many steps read the same facts (a node's ports, its
    counters), and the copy is the walk's largest cost. The values are not changed during a walk, and
    the copies are only read (a step and its evidence rows already share one)."""

    def __init__(self) -> None:
        self._done: dict[int, tuple[Any, Any]] = {}  # id -> (the value, kept alive; its copy)

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, (dict, list, tuple, set, frozenset)):
            return json_safe(value)
        hit = self._done.get(id(value))
        if hit is None or hit[0] is not value:
            hit = self._done[id(value)] = (value, json_safe(value))
        return hit[1]


def walk(rs: RunbookSet, facts: FactSource, answers: dict[str, str] | None = None,
         also_sweep: list[str] | None = None) -> Diagnosis:
    """Walk from the root's entry to a leaf, then sweep for secondary findings.

    The sweep covers the runbooks the path entered plus `also_sweep` (the node's fabric branch,
    so a fault found in the trunk still reports, say, ECN off as a secondary finding).
    """
    answers = answers or {}
    safe = _SafeOnce()
    healthy = _reaching_healthy(rs)

    def faults(target: str) -> bool:  # an outcome from which no healthy end is reached
        return target not in healthy

    decisions: list[_Decision] = []
    entered: list[str] = []
    key = rs.entry
    held: tuple[HealthyLeaf, str] | None = None  # a rejoining runbook's healthy end, and where it resumes
    for _ in range(len(rs.nodes()) + 1):  # a path visits each node once at most
        node = rs.node(key)
        if held is not None and key == held[1]:
            node = held[0]  # the rejoined stretch passed: the walk ends where the detour did
            break
        if node.runbook not in entered:
            entered.append(node.runbook)
        rejoin = rs.runbooks[node.runbook].rejoin
        if isinstance(node, HealthyLeaf) and node.verdict == HEALTHY and rejoin is not None and held is None:
            held, key = (node, rejoin.until), rejoin.at  # Runbook.rejoin: run that stretch too
            continue
        if isinstance(node, (CauseLeaf, HealthyLeaf)):
            break
        decision = decide(node, facts, answers, safe, faults)
        decisions.append(decision)
        key = node.outcomes[decision.step.outcome].target
    else:  # build_set() rejects cycles; a hand-built set might not
        raise RunbookError(f"the walk did not reach a leaf from '{rs.entry}'")
    on_path = {d.step.node for d in decisions}
    swept = entered + [r for r in (also_sweep or []) if r in rs.runbooks and r not in entered]
    secondary = sweep(rs, facts, swept, on_path, node.cause if isinstance(node, CauseLeaf) else None, safe, faults)
    return _diagnosis(rs, node, decisions, secondary, entered)


# The end of an unknown reason whose check read a derived "unknown" (cond_eval.UNSAID): the text did not
# show the fact, which is not the same as a fact read as null (evidence/differential_steps.py unsaid).
UNSHOWN_REASON = "not shown in the evidence"


def decide(node: Check | Question, facts: FactSource, answers: dict[str, str],
           safe: Callable[[Any], Any] = json_safe, faults: Callable[[str], bool] | None = None) -> _Decision:
    """Evaluate one check or question: its outcome, deciding value and evidence. `faults(target)`: whether
    an outcome's target can only end in a fault; such an outcome never rests on a derived "unknown"
    (cond_eval.UNSAID: a GDR state no line showed): the check is evaluated again with it as UNKNOWN."""
    if isinstance(node, Question):
        return _answer(node, answers)
    ev = evaluate(node.condition, facts, strict=False)  # type: ignore[arg-type]
    outcome = "yes" if ev.result is True else "no" if ev.result is False else "unknown"
    if ev.read_unsaid and outcome != "unknown" and faults is not None and faults(node.outcomes[outcome].target):
        ev = evaluate(node.condition, facts, strict=False, unsaid_unknown=True)  # type: ignore[arg-type]
        outcome = "yes" if ev.result is True else "no" if ev.result is False else "unknown"
    obs_of = {ref: ev.observations[fact] for ref, fact in ev.fact_of.items()}
    used = {ref: safe(v) for ref, v in ev.facts_used.items()}  # once: the step and the evidence show it
    value: Any = json_safe(ev.witnesses) if ev.witnesses else used
    step = Step(node.key, "check", node.title, outcome, node.outcomes[outcome].means, value,
                [_fact_row(ref, obs) for ref, obs in obs_of.items()],
                decides=walk_var_attrs(node.condition.expr) if ev.witnesses and node.condition else [])
    evidence = [
        EvidenceRow(node.key, ref, used[ref], node.expected, obs.source, obs.status, obs.reason)
        for ref, obs in obs_of.items()
    ]
    reason = ""
    if outcome == "unknown":
        reason = _unknown_reason(ev.error, ev.observations, ev.facts_used)
    return _Decision(step, evidence, reason)


def _answer(node: Question, answers: dict[str, str]) -> _Decision:
    given = answers.get(node.answer)
    outcome = given if given in node.choices else "unknown"
    step = Step(node.key, "question", node.title, outcome, node.outcomes[outcome].means, given)
    reason = ""
    if given is None:
        reason = f"not answered: '{node.answer}' is one of {', '.join(node.choices)}"
    elif outcome == "unknown":
        reason = f"answer '{given}' for '{node.answer}' is not one of {', '.join(node.choices)}"
    return _Decision(step, [], reason)


def _fact_row(ref: str, obs: Observation) -> dict:
    return {"fact": ref, "status": obs.status, "source": obs.source, "reason": obs.reason}


def _unknown_reason(error: str | None, observations: dict[str, Observation], used: dict[str, Any]) -> str:
    if error:
        return f"the condition could not be evaluated: {error}"
    bad = [(fact, obs) for fact, obs in observations.items() if obs.status != OK]
    if bad:
        return "; ".join(f"{fact} is {obs.status}" + (f": {obs.reason}" if obs.reason else "") for fact, obs in bad)
    unsaid = [ref for ref, value in used.items() if value is UNKNOWN]  # an ok fact's derived "unknown" (cond_eval UNSAID)
    if unsaid:
        return f"{', '.join(unsaid)} {'is' if len(unsaid) == 1 else 'are'} {UNSHOWN_REASON}"
    nulls = [ref for ref, value in used.items() if value is None]
    if nulls:
        return f"{', '.join(nulls)} {'is' if len(nulls) == 1 else 'are'} null or absent"
    # An ok fact can still hold values it could not judge; its reason says why (an idle window,
    # a saturated counter) and what clears it.
    said = [f"{fact}: {obs.reason}" for fact, obs in observations.items() if obs.reason]
    if said:
        return "; ".join(said)
    return "the observed values could not decide it (a value it needs is null or absent)"


def sweep(rs: RunbookSet, facts: FactSource, entered: list[str], on_path: set[str], primary: str | None,
          safe: Callable[[Any], Any] = json_safe, faults: Callable[[str], bool] | None = None
          ) -> list[tuple[_Decision, CauseLeaf]]:
    """Secondary findings: other checks of the entered runbooks that land on a cause leaf."""
    found: list[tuple[_Decision, CauseLeaf]] = []
    seen = {primary} if primary else set()
    for rb_id in entered:
        for node in rs.runbooks[rb_id].nodes.values():
            if not isinstance(node, Check) or node.key in on_path:
                continue
            leads = {label: rs.node(o.target) for label, o in node.outcomes.items() if label in ("yes", "no")}
            if not any(isinstance(t, CauseLeaf) and t.cause not in seen for t in leads.values()):
                continue
            decision = decide(node, facts, {}, safe, faults)
            leaf = leads.get(decision.step.outcome)
            if isinstance(leaf, CauseLeaf) and leaf.cause not in seen:
                seen.add(leaf.cause)
                found.append((decision, leaf))
    return found


def _finding(leaf: CauseLeaf, decision: _Decision | None) -> Finding:
    node = decision.step.node if decision else leaf.key
    value = decision.step.value if decision else None
    return Finding(leaf.cause, leaf.title, leaf.severity, leaf.owner, node, value)


def _diagnosis(rs: RunbookSet, leaf: Node, decisions: list[_Decision], secondary: list[tuple[_Decision, CauseLeaf]],
               entered: list[str]) -> Diagnosis:
    # An unanswered question is not missing evidence: only checks make a verdict inconclusive.
    inconclusive = [{"node": d.step.node, "reason": d.reason} for d in decisions
                    if d.step.outcome == "unknown" and d.step.kind == "check"]
    unanswered = [{"node": d.step.node, "reason": d.reason} for d in decisions
                  if d.step.outcome == "unknown" and d.step.kind == "question"]
    diag = Diagnosis(verdict=FAULT, path=[d.step for d in decisions], inconclusive=inconclusive,
                     unanswered=unanswered, runbooks=entered)
    leaves: list[CauseLeaf] = []
    if isinstance(leaf, CauseLeaf):
        diag.root_cause = {"id": leaf.cause, "title": leaf.title, "severity": leaf.severity, "owner": leaf.owner,
                           "summary": leaf.summary, "node": leaf.key}
        diag.findings.append(_finding(leaf, decisions[-1] if decisions else None))
        leaves.append(leaf)
    elif isinstance(leaf, HealthyLeaf):
        diag.verdict = INCONCLUSIVE if inconclusive else leaf.verdict
        title = leaf.title if leaf.verdict == HEALTHY else VERDICT_HEADLINE[leaf.verdict]
        diag.healthy = {"id": leaf.healthy, "title": title, "summary": leaf.summary,
                        "next_steps": list(leaf.next_steps), "node": leaf.key}
    for decision, cause_leaf in secondary:
        diag.findings.append(_finding(cause_leaf, decision))
        leaves.append(cause_leaf)
    if diag.root_cause is None and leaves:
        # The path ended healthy but another check of the same runbooks fails: that is a fault.
        first = leaves[0]
        diag.verdict = FAULT
        diag.root_cause = {"id": first.cause, "title": first.title, "severity": first.severity,
                           "owner": first.owner, "summary": first.summary, "node": first.key}
    _badge(rs, decisions, diag.verdict == NOT_APPLICABLE, frozenset(entered))
    seen_rows: set[tuple[str, str]] = set()
    for decision in [*decisions, *(d for d, _ in secondary)]:
        for row in decision.evidence:
            if (row.node, row.fact) not in seen_rows:
                seen_rows.add((row.node, row.fact))
                diag.evidence.append(row)
    for cause_leaf in leaves:
        for text in cause_leaf.remediation:
            if all(r["step"] != text for r in diag.remediation):
                diag.remediation.append({"step": text, "owner": cause_leaf.owner})
        diag.verification += [v for v in cause_leaf.verification if v not in diag.verification]
    return diag


def _reaching_healthy(rs: RunbookSet, entered: frozenset[str] = frozenset()) -> set[str]:
    """The nodes from which some healthy end can be reached (a reverse walk over the outcomes; the
    walk runs without networkx, which only validation loads); a detour's end only when entered
    (Runbook.detour: the plugin branch is reachable from "no RDMA ports", which on any other GPU node
    is a failure or nothing to judge, never a pass)."""
    detours = {rb.id for rb in rs.runbooks.values() if rb.detour}
    parents: dict[str, set[str]] = {}
    for node in rs.nodes():
        for outcome in getattr(node, "outcomes", {}).values():
            parents.setdefault(outcome.target, set()).add(node.key)
    reached = {n.key for n in rs.nodes() if isinstance(n, HealthyLeaf) and n.verdict == HEALTHY
               and (n.runbook not in detours or n.runbook in entered)}
    todo = list(reached)
    while todo:
        for parent in parents.get(todo.pop(), ()):
            if parent not in reached:
                reached.add(parent)
                todo.append(parent)
    return reached


def _badge(rs: RunbookSet, decisions: list[_Decision], not_applicable: bool, entered: frozenset[str] = frozenset()) -> None:
    """Each step's badge from where its outcome leads: an outcome from which no healthy end can be
    reached failed the check (n.a. when the node has nothing of NCCL's networking to judge)."""
    passing = _reaching_healthy(rs, entered)
    for decision in decisions:
        step = decision.step
        target = cast("Check | Question", rs.node(step.node)).outcomes[step.outcome].target  # a decided step
        if step.outcome == "unknown":
            step.badge = STEP_UNKNOWN
        elif target in passing:
            step.badge = STEP_PASS
        else:
            step.badge = STEP_NA if not_applicable else STEP_FAIL
