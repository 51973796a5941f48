"""What the walk's steps say to the ranked differential of pasted text (evidence/differential.py): the
checks that led away from a cause, on lines of the text; the questions the text left open; the passes
that judged nothing; the lines a step's facts were read from; the init that crossed hosts."""

from __future__ import annotations

import json
import re

from allreduce_doctor.evidence.host import FIELD_TOOLS
from allreduce_doctor.evidence.job_summary import FIELD_PARTS
from allreduce_doctor.evidence.kinds import GENERIC
from allreduce_doctor.runbook.diagnosis import Diagnosis
from allreduce_doctor.runbook.model import CauseLeaf, Check, RunbookSet
from allreduce_doctor.runbook.walk import UNSHOWN_REASON
from allreduce_doctor.status import STEP_NA, STEP_PASS

# The fields of log.job / log.host computed from parts of the text (job_summary.FIELD_PARTS, host.FIELD_TOOLS):
# with none of those parts pasted the field was never observed, whatever else the text holds.
PARTS = {"job": set(FIELD_PARTS), "host": set(FIELD_TOOLS)}
LINE_RE = re.compile(r"\S:\d+(?:-\d+)?(?:,|$)")  # FILE:LINE or FILE:A-B
UNSHOWN = "not shown in the text: no line of it is one this check reads"


def contradicted(diag: Diagnosis, rs: RunbookSet, job: dict, context_lines: set[str]) -> dict[str, list[str]]:
    """cause -> the decided steps whose outcome led away from it (a check that said no to it), each with
    the lines its facts were read from: a log.host or log.job field cites the outputs it is computed from
    (host.py FIELD_TOOLS, job_summary.py FIELD_PARTS), not every line pasted, and none when the text shows none."""
    own = field_sources(job)
    out: dict[str, list[str]] = {}
    for step in diag.path:
        if step.kind != "check" or step.outcome not in ("yes", "no"):
            continue
        node = rs.node(step.node)
        other = "no" if step.outcome == "yes" else "yes"
        if not isinstance(node, Check) or other not in node.outcomes:
            continue
        leaf = rs.node(node.outcomes[other].target)
        # A check that looks for kinds of line (`"connect_refused" in log.nccl.errors`: NCCL's TCP) but said no before
        # it read them (no two hosts' `Bootstrap : Using` lines) says nothing of a cause the text shows only by
        # specific kinds it does not look for (an EFA remote unreachable: no TCP connect).
        looked_for = set(re.findall(r'"(\w+)" in log\.nccl\.errors', node.check))
        shown_by = set((job.get("errors_by_cause") or {}).get(getattr(leaf, "cause", ""), ())) - GENERIC
        if looked_for and shown_by and not shown_by & looked_for and \
                "log.nccl.errors" not in {f["fact"] for f in step.facts}:
            continue
        # Only lines of the text speak against a cause: a check that said no because nothing was
        # pasted (no FILE:LINE behind it) proves nothing.
        sources = [_own_source(f, own) for f in step.facts]
        lines = [s for s in sources if LINE_RE.search(s)]
        if isinstance(leaf, CauseLeaf) and lines and not set(lines) <= context_lines:
            out.setdefault(leaf.cause, []).append(f"{', '.join(dict.fromkeys(lines))}: {step.title} -> {step.outcome}")
    return out


def bootstrapped(nccl: dict | None) -> str:
    """The Init COMPLETE lines of ranks on two hosts of one communicator, where its bootstrap ran over TCP
    (not over the net plugin: 2.23+ `Bootstrap: Using mlx5_0:1`, which leaves the socket interface untried)."""
    done = (nccl or {}).get("init_across_hosts") or {}
    if len(done) < 2 or (nccl or {}).get("bootstrap_net"):
        return ""
    return f"{', '.join(done.values())}: ranks on {' and '.join(done)} completed init (Init COMPLETE): NCCL's " \
           "bootstrap reached every rank across the hosts over TCP"


def unshown(diag: Diagnosis, job: dict) -> None:
    """A check of the log's runbook that passed with a fact no line of the text is behind judged nothing
    (a scope read from a test table, a transport from no NCCL line at all: the False came from the fact
    never shown): its badge is n.a., not pass (issue 29 item 3).
    Missing is never healthy (docs/design-rules.md); its outcome and the walk stay."""
    own = field_sources(job)
    for step in diag.path:
        if step.badge != STEP_PASS or not step.node.startswith("nccl_log.") or not step.facts:
            continue
        if not all(LINE_RE.search(_own_source(f, own, fallback=True)) for f in step.facts):
            step.badge, step.means = STEP_NA, UNSHOWN


def field_sources(job: dict | None) -> dict[str, dict[str, str]]:
    return {"log.host": (job or {}).get("host_sources") or {}, "log.job": (job or {}).get("field_sources") or {}}


def _own_source(fact_row: dict, own: dict[str, dict[str, str]], fallback: bool = False) -> str:
    """The lines a step's fact was read from: a field of log.host / log.job by its own parts. A field without
    lines of its own has none; `fallback`: a field that names no parts (PARTS) takes the observation's lines."""
    observation, _, rest = fact_row["fact"].partition(".")[2].partition(".")
    table = own.get(f"log.{observation}") if fact_row["fact"].startswith("log.") else None
    field = rest.split(".")[0]
    if table is not None and (field in table or not fallback or field in PARTS.get(observation, ())):
        return table.get(field, "")
    return str(fact_row.get("source") or "")


def open_questions(diag: Diagnosis, rs: RunbookSet, job: dict | None = None) -> list[tuple[str, str, str]]:
    """(cause, line, next step) for each check of the log's runbook that the text left open: the
    situation it tests is in the text, the fact that decides it is not (an unknown stays unknown, and its
    cause stays a candidate with what to collect). A check open because the text's derived fields said
    nothing it tests (unsaid: "all": the walk's reason says a derived "unknown" was read, UNSHOWN_REASON) asks
    nothing of the text; a fact read as null (failing pairs that could not be classed) stays a question."""
    out = []
    reasons = {i["node"]: i["reason"] for i in diag.inconclusive}
    own = field_sources(job)
    for at, step in enumerate(diag.path):
        if step.kind != "check" or step.outcome != "unknown" or not step.node.startswith("nccl_log."):
            continue
        if reasons.get(step.node, "").endswith(UNSHOWN_REASON) and unsaid(step, own) == "all":
            continue
        node = rs.node(step.node)
        if not isinstance(node, Check):  # a check step is a Check node
            continue
        line = f"{_sources(step) or step.node}: {step.title} -> unknown"
        before = diag.path[at - 1] if at else None
        if not LINE_RE.search(_sources(step)) and before is not None and LINE_RE.search(_sources(before)):
            # The question's own fact is not in the text; the lines that led the walk to it are.
            line = f"{_sources(before)}: {before.title} -> {before.outcome}; {step.title} -> unknown"
        for label in ("yes", "no"):
            leaf = rs.node(node.outcomes[label].target) if label in node.outcomes else None
            if isinstance(leaf, Check) and _guards(leaf, node):
                leaf = rs.node(leaf.outcomes["yes"].target)  # the cause behind a guard (hang_iommu -> hang_acs)
            if isinstance(leaf, CauseLeaf):
                out.append((leaf.cause, line,
                            f"decide '{step.title}': {reasons.get(step.node, 'the deciding fact is not in the text')}"))
    return out


def observed_facts(step, own: dict[str, dict[str, str]]) -> list[str]:
    """The facts of a step that read a known value from a line of the text ("log.job.bandwidth.verdict: below"),
    each with the lines it was read from: what the step rests on (an unknown, an empty or a line-less value is not)."""
    values = step.value if isinstance(step.value, dict) else {}
    out = []
    for f in step.facts:
        source = _own_source(f, own, fallback=True)
        value = values.get(f["fact"])
        if value not in (None, "", [], {}) and f.get("status") == "ok" and LINE_RE.search(source):
            out.append(f"{source}: {f['fact']} = {json.dumps(value)[:80]}")
    return out


def unsaid(step, own: dict[str, dict[str, str]]) -> str:
    """Why a step is open when the text's derived fields did not say (every fact was read, one read null: a gdr
    state "unknown" reads UNKNOWN, runbook/cond_eval.py UNSAID): "all" when none showed a value (the text shows
    nothing it tests), "part" when another fact did (a busbw below the NICs' rate), "" when a fact is missing."""
    values = step.value if isinstance(step.value, dict) else None
    if not step.facts or values is None or any(f.get("status") != "ok" for f in step.facts) \
            or all(values.get(f["fact"]) is not None for f in step.facts):
        return ""
    return "part" if observed_facts(step, own) else "all"


def _guards(check: Check, before: Check) -> bool:
    """`check` only guards a cause leaf for `before`: its yes is the leaf, its no rejoins the chain where
    `before`'s unknown goes (a condition of its own, so that the sweep, checking it out of turn, finds
    nothing without it). An open `before` leaves that leaf open too."""
    no, unknown = check.outcomes.get("no"), before.outcomes.get("unknown")
    return "yes" in check.outcomes and no is not None and unknown is not None and no.target == unknown.target


def _sources(step) -> str:
    """The lines a step's facts were read from; where some are lines of the text, only those (not the
    'no such lines in the evidence' of a fact the text lacks)."""
    sources = list(dict.fromkeys(str(f["source"]) for f in step.facts if f.get("source")))
    lines = [s for s in sources if LINE_RE.search(s)]
    return ", ".join(lines or sources)


def step_sources(diag: Diagnosis, node: str, own: dict[str, dict[str, str]]) -> list[str]:
    """The deciding facts of a step, each with the lines it was read from and the value it read
    ("FILE:LINES: log.job.gdr.state = "off""): the text report prints them beside the cause."""
    for step in diag.path:
        if step.node == node:
            values = step.value if isinstance(step.value, dict) else {}
            return [f"{source}: {f['fact']}" + (f" = {json.dumps(values[f['fact']])[:80]}" if values.get(f["fact"]) is not None else "")
                    for f in step.facts if (source := _own_source(f, own))][:3]
    return []
