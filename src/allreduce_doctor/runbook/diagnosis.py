"""Diagnosis: what the walk found, as JSON-safe data. The input of every view and exporter.

to_dict() gives plain JSON types only (json.dumps(..., allow_nan=False) works); from_dict()
reads it back. Values taken from observations are made JSON-safe and truncated (json_safe).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from itertools import islice
from typing import Any

from allreduce_doctor.plaindata import as_plain

from .tristate import UNKNOWN

MAX_ITEMS, MAX_KEYS, MAX_TEXT, MAX_DEPTH = 20, 40, 500, 6
_AS_IS = frozenset({int, bool, type(None)})  # json_safe returns these unchanged: no call per counter


def json_safe(value: Any, depth: int = 0) -> Any:
    """A JSON-safe, bounded copy: long lists/mappings/strings cut with a marker, NaN as text."""
    if value is UNKNOWN or value is None:
        return None
    if isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + f"... ({len(value) - MAX_TEXT} more characters)"
    if depth >= MAX_DEPTH:
        return "..."
    if isinstance(value, dict):
        # islice: a mapping of thousands of counters is cut without listing all of it first
        out = {str(k): v if type(v) in _AS_IS else json_safe(v, depth + 1) for k, v in islice(value.items(), MAX_KEYS)}
        if len(value) > MAX_KEYS:
            out["..."] = f"{len(value) - MAX_KEYS} more keys"
        return out
    if isinstance(value, (list, tuple, set, frozenset)):
        out_list = [v if type(v) in _AS_IS else json_safe(v, depth + 1) for v in islice(value, MAX_ITEMS)]
        if len(value) > MAX_ITEMS:
            out_list.append(f"... {len(value) - MAX_ITEMS} more")
        return out_list
    return json_safe(str(value), depth)


@dataclass
class Step:
    node: str  # "runbook.node"
    kind: str  # check | question
    title: str
    outcome: str  # yes | no | unknown | a choice
    means: str
    value: Any = None  # the deciding value: witnesses, else the facts used (reference -> value)
    facts: list[dict] = field(default_factory=list)  # {fact, status, source, reason}
    badge: str = ""  # what the outcome means for the node: status.STEP_PASS / STEP_FAIL / STEP_UNKNOWN / STEP_NA
    decides: list[str] = field(default_factory=list)  # the record attributes the check reads: shown first, never cut


@dataclass
class Finding:
    cause: str
    title: str
    severity: str
    owner: str
    node: str  # the check (or question) that led to the cause
    value: Any = None
    # The ranked differential of an evidence-only run (evidence/differential.py); a node's walk
    # decides, so there these stay empty.
    confidence: str = ""  # high | medium | low
    supporting: list[str] = field(default_factory=list)  # FILE:LINE: the line, that points at it
    contradicting: list[str] = field(default_factory=list)  # FILE:LINE: a check that led away from it
    next_step: str = ""  # the paste or command that confirms it or tells it from the others


@dataclass
class EvidenceRow:
    node: str
    fact: str  # the reference as written: nccl.env.NCCL_IB_GID_INDEX, exists(rdma.ports)
    observed: Any
    expected: str
    source: str
    status: str
    reason: str = ""


@dataclass
class Diagnosis:
    verdict: str  # one of status.VERDICTS
    root_cause: dict | None = None  # {id, title, severity, owner, summary, node}
    healthy: dict | None = None  # {id, title, summary, next_steps, node}
    findings: list[Finding] = field(default_factory=list)  # primary first
    path: list[Step] = field(default_factory=list)
    evidence: list[EvidenceRow] = field(default_factory=list)
    remediation: list[dict] = field(default_factory=list)  # {step, owner}
    verification: list[str] = field(default_factory=list)
    inconclusive: list[dict] = field(default_factory=list)  # {node, reason}
    unanswered: list[dict] = field(default_factory=list)  # questions left unknown: {node, reason}
    runbooks: list[str] = field(default_factory=list)
    context: dict = field(default_factory=dict)  # host, source (live/bundle), versions: set by the Session
    bundle: str | None = None  # the bundle diagnosed; JSON: context.bundle
    evidence_used: dict | None = None  # what pasted text gave (evidence report); JSON: top-level, when any
    warnings: list[str] = field(default_factory=list)  # one line each, shown first (a --fabric the ports contradict)
    bandwidth: dict | None = None  # measured busbw vs what the NICs carry (busbw.summary); JSON: top-level, when any

    def to_dict(self) -> dict:
        data = as_plain(self)
        bundle, used, warnings = data.pop("bundle"), data.pop("evidence_used"), data.pop("warnings")
        if bundle:
            data["context"]["bundle"] = bundle
        if used is not None:
            data["evidence_used"] = used
        if warnings:
            data["warnings"] = warnings
        if data.get("bandwidth") is None:
            data.pop("bandwidth", None)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Diagnosis:
        def rows(kind: type, items: Any) -> list:
            names = {f.name for f in fields(kind)}
            return [kind(**{k: v for k, v in item.items() if k in names}) for item in items or []]

        return cls(
            verdict=data["verdict"],
            root_cause=data.get("root_cause"),
            healthy=data.get("healthy"),
            findings=rows(Finding, data.get("findings")),
            path=rows(Step, data.get("path")),
            evidence=rows(EvidenceRow, data.get("evidence")),
            remediation=list(data.get("remediation") or []),
            verification=list(data.get("verification") or []),
            inconclusive=list(data.get("inconclusive") or []),
            unanswered=list(data.get("unanswered") or []),
            runbooks=list(data.get("runbooks") or []),
            context={k: v for k, v in (data.get("context") or {}).items() if k != "bundle"},
            bundle=(data.get("context") or {}).get("bundle"),
            evidence_used=data.get("evidence_used"),
            warnings=[str(w) for w in data.get("warnings") or []],
            bandwidth=data.get("bandwidth"),
        )
