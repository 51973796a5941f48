"""What the diagnosis screen shows, as plain data (no Textual): badges, outcomes, node details.

A node's status: `fail` when its outcome leads to the root cause or a secondary finding, `pass`
for any other decided outcome, `unknown` when the walk could not decide it (or a question is
unanswered), `not_reached` when the walk never came there. Leaves: the final one is `fail`
(a cause) or `pass` (healthy); others are not reached.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import cast

from allreduce_doctor.runbook.model import CauseLeaf, Check, HealthyLeaf, Question, RunbookSet
from allreduce_doctor.status import HEALTHY, STEP_BADGE, STEP_FAIL, STEP_NA, STEP_PASS, STEP_UNKNOWN

PASS, FAIL, UNKNOWN, NA, NOT_REACHED = STEP_PASS, STEP_FAIL, STEP_UNKNOWN, STEP_NA, "not_reached"
BADGES = {**STEP_BADGE, NOT_REACHED: " -- "}  # the words of every report, plus the TUI's unreached nodes
# A fact reference inside a condition text: dotted names such as nccl.env.vars or roce.priority.
_REF = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+")


@dataclass
class Branch:
    """One outcome of a node, as a child in the tree."""

    label: str  # yes / no / unknown / a choice
    target: str  # runbook.node
    means: str
    taken: bool


@dataclass
class NodeView:
    key: str
    kind: str  # check | question | cause | healthy
    title: str
    status: str
    why: str = ""
    check: str = ""
    expected: str = ""
    outcome: str | None = None  # on the path (or swept): the outcome it had
    means: str = ""
    value: object = None
    decides: list[str] = field(default_factory=list)  # the record attributes the check reads (Step.decides)
    evidence: list[dict] = field(default_factory=list)
    facts: list[dict] = field(default_factory=list)
    ask: str = ""
    answer_name: str = ""
    choices: list[str] = field(default_factory=list)
    answered: str | None = None
    summary: str = ""
    secondary: bool = False  # off the path, but a secondary finding
    branches: list[Branch] = field(default_factory=list)


def node_title(node) -> str:
    if isinstance(node, CauseLeaf):
        return f"cause: {node.cause}"
    if isinstance(node, HealthyLeaf):
        return f"healthy: {node.healthy}"
    return node.title or node.key


class DiagnosisModel:
    """The runbooks plus one Diagnosis (its to_dict() form), answering what each node shows."""

    def __init__(self, runbooks: RunbookSet, diagnosis: dict, answers: dict[str, str] | None = None) -> None:
        self.runbooks = runbooks
        self.d = diagnosis
        self.answers = dict(answers or {})
        self.steps = {s["node"]: s for s in diagnosis.get("path", [])}
        self.path = [s["node"] for s in diagnosis.get("path", [])]
        self.findings = {f["node"]: f for f in diagnosis.get("findings", [])}
        self.leaf = self._final_leaf()

    def _final_leaf(self) -> str | None:
        """The leaf the walk stopped at: the last step's outcome target."""
        if not self.path:
            return self.runbooks.entry if self.runbooks.node(self.runbooks.entry).is_leaf else None
        last = self._step_node(self.path[-1])
        return last.outcomes[self.steps[self.path[-1]]["outcome"]].target

    def _step_node(self, key: str) -> Check | Question:
        """The runbook node of a step on the path: the walk steps only through checks and
        questions (runbook/walk.py makes a Step for no other node), so a cast, checked by no one."""
        return cast("Check | Question", self.runbooks.node(key))

    # -- statuses --------------------------------------------------------------------------
    def status(self, key: str) -> str:
        node = self.runbooks.node(key)
        if key == self.leaf:
            if isinstance(node, HealthyLeaf) and node.verdict != HEALTHY:
                return NA
            return FAIL if isinstance(node, CauseLeaf) else PASS
        step = self.steps.get(key)
        if step is None:
            return FAIL if key in self.findings else NOT_REACHED
        if step["outcome"] == "unknown":
            return UNKNOWN
        if key in self.findings or isinstance(self.runbooks.node(self._step_node(key).outcomes[step["outcome"]].target),
                                              CauseLeaf):
            return FAIL
        return step.get("badge") or PASS  # the walk's badge: an outcome with no healthy end ahead fails

    def badge(self, key: str) -> str:
        return BADGES[self.status(key)]

    # -- structure ---------------------------------------------------------------------------
    def groups(self) -> list[tuple[str, str, list[str]]]:
        """(runbook id, title, keys on the path in that runbook, the final leaf included)."""
        out: list[tuple[str, str, list[str]]] = []
        for rb_id in self.d.get("runbooks") or [self.runbooks.root]:
            keys = [k for k in self.path if k.partition(".")[0] == rb_id]
            if self.leaf and self.leaf.partition(".")[0] == rb_id:
                keys.append(self.leaf)
            out.append((rb_id, self.runbooks.runbooks[rb_id].title, keys))
        return out

    def secondary(self) -> list[str]:
        """Off-path nodes that produced a secondary finding."""
        return [k for k in self.findings if k not in self.steps and k != self.leaf and k in self._known()]

    def _known(self) -> set[str]:
        return {n.key for n in self.runbooks.nodes()}

    def branches(self, key: str) -> list[Branch]:
        node = self.runbooks.node(key)
        if isinstance(node, (CauseLeaf, HealthyLeaf)):  # node.is_leaf, spelt so that mypy narrows
            return []
        step = self.steps.get(key) or {}
        taken = step.get("outcome")
        if taken is None and key in self.findings:  # swept: its outcome led to the finding
            taken = next((lbl for lbl, o in node.outcomes.items()
                          if isinstance(leaf := self.runbooks.node(o.target), CauseLeaf)
                          and leaf.cause == self.findings[key]["cause"]), None)
        return [Branch(label, o.target, o.means, label == taken) for label, o in node.outcomes.items()]

    def focus_key(self) -> str | None:
        """Where the cursor starts: the step that named the root cause, else an open question,
        else the leaf the walk reached."""
        rc = self.d.get("root_cause") or {}
        deciding = next((f["node"] for f in self.d.get("findings", []) if f.get("cause") == rc.get("id")), None)
        if deciding in self.steps:
            return deciding
        return self.first_unanswered() or self.leaf or (self.path[-1] if self.path else None)

    def first_unanswered(self) -> str | None:
        return next((k for k in self.path if self.steps[k]["kind"] == "question"
                     and self.steps[k]["outcome"] == "unknown"), None)

    # -- details -----------------------------------------------------------------------------
    def view(self, key: str) -> NodeView:
        node = self.runbooks.node(key)
        step = self.steps.get(key) or {}
        finding = self.findings.get(key) or {}
        v = NodeView(key, node.kind, node_title(node), self.status(key))
        v.branches = self.branches(key)
        v.evidence = [r for r in self.d.get("evidence", []) if r.get("node") == key]
        v.secondary = key in self.findings and key not in self.steps and key != self.leaf
        taken = next((b for b in v.branches if b.taken), None)
        v.outcome = step.get("outcome") or (taken.label if taken else None)
        v.means = step.get("means") or (taken.means if taken else "")
        v.value = step.get("value", finding.get("value"))
        v.decides = list(step.get("decides") or [])
        v.facts = list(step.get("facts") or [])
        if isinstance(node, Check):
            v.why, v.check, v.expected = node.why, node.check, node.expected
        elif isinstance(node, Question):
            v.why, v.ask, v.answer_name, v.choices = node.why, node.ask, node.answer, node.choices
            v.answered = self.answers.get(node.answer)
        else:
            v.summary = node.summary
            v.title = f"{node_title(node)}: {node.title}"
        return v

    def fact_refs(self, key: str) -> list[str]:
        """The fact references a node's check reads (for the raw-value dialog)."""
        view = self.view(key)
        refs = [f["fact"] for f in view.facts] + [r["fact"] for r in view.evidence]
        if not refs and view.check:
            refs = _REF.findall(view.check)
        return list(dict.fromkeys(refs))


def fact_of(ref: str, known) -> str | None:
    """The observed fact a reference reads: the longest dotted prefix that is a fact."""
    for name in _REF.findall(ref) or [ref]:
        parts = name.split(".")
        for n in range(len(parts), 0, -1):
            candidate = ".".join(parts[:n])
            if candidate in known:
                return candidate
    return None
