"""The format-neutral ticket: everything an incident ticket carries, built once from a diagnosis.

Every renderer (Markdown, GitHub, Jira wiki, ADF, JSON) reads this model and nothing else, so the
formats cannot disagree on what a ticket says. The diagnosis is redacted before anything is taken
from it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

from allreduce_doctor.oneline import deciding_finding, observed_text, short, step_badge, unreferenced
from allreduce_doctor.redact import RULES, redact_diagnosis
from allreduce_doctor.status import HEALTHY, NOT_APPLICABLE, STEP_BADGE, STEP_FAIL, STEP_NA, VERDICT_HEADLINE, verdict_headline

from . import extract

TITLE_MAX = 255
RAW_MIN = 120  # an observed value longer than this (as JSON) is also shown raw, folded
FABRICS = {"ib": "InfiniBand", "roce": "RoCE v2"}
LABEL = "allreduce-doctor"


@dataclass
class RawBlock:
    """A long observed value, shown folded (GitHub <details>, a Jira code block) after the table."""

    fact: str
    nodes: list[str]  # the checks that used it
    value: Any
    priority: int  # 0 the deciding witnesses, 1 the deciding check's evidence, 2 the rest: kept in that order

    @cached_property
    def text(self) -> str:  # rendered once: fit() draws a document many times
        return raw_json(self.value)


@dataclass
class Ticket:
    title: str
    fingerprint: str
    labels: list[str]
    verdict: str
    cause: str
    cause_title: str
    severity: str
    owner: str
    fabric: str
    scope: dict  # host, slurm_job, nodes_checked, nodes_affected
    symptom: list[str]
    root_cause: dict  # id, title, summary, confidence, confidence_reason
    path: list[dict]  # node, title, kind, outcome, means, value, mark (FAIL / ok / ?)
    evidence: list[dict]  # node, fact, observed, expected, source, status, reason
    raw: list[RawBlock]
    secondary: list[dict]
    fleet: dict | None
    remediation: list[dict]
    verification: list[str]
    next_steps: list[str]
    inconclusive: list[dict]
    unanswered: list[dict]
    bandwidth: dict | None
    versions: list[tuple[str, str]]
    provenance: list[tuple[str, str]]
    redacted: list[str]  # where something was redacted (JSON paths, never values)
    redaction_rules: str = RULES
    bundle: str | None = None  # the snapshot bundle the diagnosis came from (attached on Jira)
    deciding: list[str] = field(default_factory=list)  # the checks whose failure named the cause
    candidates: list[dict] = field(default_factory=list)  # a paste's ranked causes (cause, confidence, for, against, next)
    headline: str = ""  # the verdict's words for its source (status.verdict_headline)

    def witnesses(self) -> dict:
        """Each deciding check's deciding value (the records that failed it)."""
        return {s["node"]: s["value"] for s in self.path if s["node"] in self.deciding}

    def to_dict(self) -> dict:
        """JSON-ready: values shown as in the documents; each long value once, whole, under raw
        (path steps and evidence rows point at it by index)."""
        data = asdict(self)
        index = {_key(r.value): i for i, r in reversed(list(enumerate(self.raw)))}
        data["raw"] = [{"fact": r.fact, "nodes": r.nodes, "priority": r.priority, "value": r.value} for r in self.raw]
        for step in data["path"]:
            step["raw"] = index.get(_key(step["value"]))
            step["value"] = short(step["value"], decides=step.get("decides"))
        witnesses = self.witnesses()
        for row in data["evidence"]:
            row["raw"] = index.get(_key(row["observed"]))
            row["observed"] = observed_text(row, witnesses)
        data["versions"] = dict(self.versions)
        data["provenance"] = dict(self.provenance)
        return data


def _key(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def raw_json(value) -> str:
    """Valid JSON, one record per line: readable folded, and half the size of indented JSON."""
    def dumps(v) -> str:
        return json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)

    if isinstance(value, list) and value:
        return "[\n" + ",\n".join(" " + dumps(v) for v in value) + "\n]"
    if isinstance(value, dict) and value:
        return "{\n" + ",\n".join(f" {dumps(str(k))}: {dumps(v)}" for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))) + "\n}"
    return dumps(value)


def one_line(text, limit: int | None = None) -> str:
    text = " ".join(str(text if text is not None else "").split())
    if limit and len(text) > limit:
        text = text[: limit - 3].rstrip() + "..."
    return text


def fingerprint(cause: str, fabric: str, nodes: list[str]) -> str:
    """Same cause, fabric and nodes -> same label, so a second run finds the first ticket."""
    basis = json.dumps({"cause": cause, "fabric": fabric, "nodes": sorted(set(nodes))}, sort_keys=True)
    return "ard-" + hashlib.sha256(basis.encode()).hexdigest()[:12]


def _where(affected: list[str], checked: int, host: str) -> str:
    if checked <= 1 or not affected:
        return host
    names = ", ".join(affected[:3]) + (f", +{len(affected) - 3} more" if len(affected) > 3 else "")
    return f"{len(affected)} of {checked} nodes ({names})"


def _bandwidth_phrase(bw: dict | None) -> str:
    if not bw:
        return ""
    if bw.get("expected"):
        return f"busbw {bw['measured']:g} GB/s vs {bw['expected']:g} GB/s expected"
    return f"busbw {bw['measured']:g} GB/s"


def _title(verdict: str, cause: str, cause_title: str, where: str, bw: dict | None, missing: list[str]) -> str:
    if verdict == "inconclusive":
        suspect = f"{cause} suspected, " if cause != "inconclusive" else ""
        text = f"inconclusive on {where}: {suspect}evidence missing" + (f" ({', '.join(missing[:3])})" if missing else "")
    else:
        text = f"{cause} on {where}: {cause_title}"
    phrase = _bandwidth_phrase(bw)
    if phrase:
        # the measurement must survive the cut: shorten the description, not the numbers
        suffix = f" ({phrase})"
        return one_line(text, TITLE_MAX - len(suffix)) + suffix
    return one_line(text, TITLE_MAX)


def _confidence(d: dict, deciding: list[str]) -> tuple[str, str]:
    rc = d.get("root_cause") or {}
    if rc.get("confidence"):
        ranked: dict = next((f for f in d.get("findings") or [] if f.get("cause") == rc.get("id") and f.get("confidence")), {})
        why = rc.get("confidence_reason") or "; ".join(ranked.get("supporting") or []) or "ranked from the pasted evidence"
        return one_line(rc["confidence"], 40), one_line(why)
    if d.get("verdict") == NOT_APPLICABLE:  # nothing was judged: no check passed, none failed
        return "n/a", "nothing was judged: no check applies to a node without NVIDIA GPUs and RDMA devices"
    checks = [s for s in d.get("path") or [] if s.get("kind", "check") == "check"]
    blind = [str(s.get("node")) for s in checks if s.get("outcome") == "unknown"]
    if d.get("verdict") == "inconclusive":
        n = len(d.get("inconclusive") or []) or len(blind)
        return "low", f"the walk stopped: {n} check(s) lacked the evidence to decide"
    weak = [f.get("fact") for s in checks if s.get("node") in deciding
            for f in s.get("facts") or [] if isinstance(f, dict) and f.get("status") != "ok"]
    if weak:
        return "medium", f"the deciding check ran without some of its evidence ({', '.join(map(str, weak[:3]))})"
    if blind:
        return "medium", f"{len(blind)} earlier check(s) lacked evidence ({', '.join(blind[:3])})"
    if d.get("verdict") == "fault":
        return "high", "every check on the path had its evidence; the deciding check failed on observed values"
    return "high", "every check on the path passed on observed evidence"


def _mark(step: dict, deciding: list[str]) -> str:
    """The step's badge, the words of every report (report.step_badge: pass / FAIL / unknown / n.a.)."""
    badge = step_badge(step, set(deciding))
    return STEP_BADGE[badge].strip() if badge in (STEP_FAIL, STEP_NA) else badge


def _raw_blocks(d: dict, deciding: list[str]) -> list[RawBlock]:
    """Long values, once each: the deciding witnesses first, then the evidence rows' values."""
    blocks: dict[str, RawBlock] = {}
    candidates = [(f"{f.get('node')}: deciding value", f.get("node"), f.get("value"), 0 if f.get("node") in deciding else 2)
                  for f in d.get("findings") or []]
    candidates += [(row.get("fact"), row.get("node"), row.get("observed"), 1 if row.get("node") in deciding else 2)
                   for row in d.get("evidence") or []]
    for fact, node, value, priority in candidates:
        if not isinstance(value, (dict, list)):
            continue
        key = _key(value)
        if len(key) <= RAW_MIN:
            continue
        block = blocks.setdefault(f"{fact}\0{key}", RawBlock(str(fact), [], value, priority))
        if node and str(node) not in block.nodes:
            block.nodes.append(str(node))
        block.priority = min(block.priority, priority)
    return sorted(blocks.values(), key=lambda b: b.priority)  # stable: order kept within each priority


def _symptom(d: dict, deciding: list[str], bw: dict | None) -> list[str]:
    out = [one_line(d["context"]["symptom"])] if isinstance(d["context"].get("symptom"), str) else []
    phrase = _bandwidth_phrase(bw)
    if phrase and bw:  # a phrase only for a measured bandwidth
        ratio = f" ({bw['measured'] / bw['expected']:.0%} of expected)" if bw.get("expected") else ""
        out.append(f"Measured all-reduce {phrase}{ratio}.")
    if bw and bw.get("note"):  # why the NICs' rate is no yardstick for it (busbw.summary)
        out.append(one_line(f"Bus bandwidth: {bw['note']}."))
    if bw and bw.get("hardware_note"):  # against what the hardware at hand carries (busbw.across_nodes)
        out.append(one_line(f"Against the hardware's ceiling: {bw['hardware_note']}."))
    steps = {s.get("node"): s for s in d.get("path") or []}
    if d["verdict"] == "fault":
        for node in deciding:
            step = steps.get(node) or {}
            out.append(f"Check failed: {one_line(step.get('title') or node)}: {one_line(step.get('means'))}.")
            if step.get("value") not in (None, "", [], {}):
                out.append(f"Deciding value: {short(step['value'], decides=step.get('decides'))}")
    elif d["verdict"] == "healthy":
        out.append(f"Every check on the path passed: {one_line((d.get('healthy') or {}).get('title', 'nothing found'))}.")
    elif d["verdict"] == NOT_APPLICABLE:
        out.append(f"{VERDICT_HEADLINE[NOT_APPLICABLE]}: {one_line((d.get('healthy') or {}).get('summary', ''))}")
    else:
        nodes = [str(i.get("node")) for i in d.get("inconclusive") or []]
        out.append(f"The decision tree could not finish: {len(nodes)} check(s) lacked evidence"
                   + (f" ({', '.join(nodes[:5])})." if nodes else "."))
    return out


def _fleet(fleet: dict | None) -> dict | None:
    if not fleet:
        return None
    settings = []
    for row in fleet.get("settings") or []:
        odd = sorted((str(node), value) for node, value in (row.get("odd") or {}).items())
        settings.append({"key": row["key"], "majority": row.get("majority"), "odd": odd})
    return {"nodes_checked": fleet.get("nodes_checked", 0), "nodes_affected": list(fleet.get("nodes_affected") or []),
            "settings": settings}


def _provenance(d: dict) -> list[tuple[str, str]]:
    ctx = d["context"]
    if ctx.get("bundle"):
        source = f"snapshot bundle {one_line(ctx['bundle'])}"
    elif ctx.get("source") == "live":
        source = "live node"
    else:
        source = one_line(ctx.get("source") or "unknown")
    when = next((ctx[k] for k in ("time", "captured_at", "when") if ctx.get(k)), None)
    return [("tool", f"allreduce-doctor {one_line(ctx.get('tool_version') or 'unknown')}"),
            ("runbook hash", one_line(ctx.get("runbook_hash") or "unknown")),
            ("probe catalogue", one_line(ctx.get("probe_catalogue") or "unknown")),
            ("runbooks", ", ".join(map(str, d.get("runbooks") or [])) or "unknown"),
            ("source", source),
            ("when", one_line(when) if when else "not recorded")]


def build_ticket(diagnosis: dict) -> Ticket:
    """The ticket for a checked diagnosis dict (see load.check_diagnosis)."""
    d, redacted = redact_diagnosis(diagnosis)
    ctx = d["context"]
    verdict = d["verdict"]
    rc = d.get("root_cause") or {}
    healthy = d.get("healthy") or {}
    findings = d.get("findings") or []
    if verdict == "fault":
        cause, cause_title = str(rc["id"]), one_line(rc.get("title") or rc["id"])
        severity, owner = one_line(rc.get("severity") or "unknown"), one_line(rc.get("owner") or "unknown")
    elif verdict == "healthy":
        cause, cause_title = str(healthy.get("id") or "no_fault_found"), one_line(healthy.get("title") or "nothing found")
        severity, owner = "none", "-"
    elif verdict == NOT_APPLICABLE:  # no GPUs, no RDMA: not a healthy verdict, and not missing evidence
        cause, cause_title, severity, owner = NOT_APPLICABLE, VERDICT_HEADLINE[NOT_APPLICABLE], "none", "-"
    elif rc.get("id"):  # a paste's first candidate, not decided: the headline every report prints
        cause, cause_title = str(rc["id"]), one_line(rc.get("title") or rc["id"])
        severity, owner = one_line(rc.get("severity") or "unknown"), one_line(rc.get("owner") or "unknown")
    else:
        cause, cause_title, severity, owner = "inconclusive", "evidence missing", "unknown", "-"
    deciding = [str(f.get("node")) for f in findings if f.get("cause") == cause and f.get("node")] if verdict == "fault" else []
    host = one_line(ctx.get("host") or "unknown host")
    fabric = str(ctx.get("fabric") or "unknown")
    fleet = _fleet(d.get("fleet"))
    checked = fleet["nodes_checked"] if fleet else 1
    nodes = [one_line(h) for h in ctx.get("hosts") or []] or [host]  # a paste's hosts, else the node read
    affected = fleet["nodes_affected"] if fleet and fleet["nodes_affected"] else (nodes if verdict == "fault" else [])
    # the title names the hosts of its own cause, not every host with a fault (a paste's hosts, a fleet's nodes)
    named = [one_line(h) for h in extract.cause_hosts(d, cause)] if verdict == "fault" and fleet else []
    named = named or affected
    bw = extract.bandwidth(d)
    print_id = fingerprint(cause, fabric, named or nodes)
    confidence, why = _confidence(d, deciding)
    missing = [str(i.get("node")) for i in d.get("inconclusive") or []]
    # the Symptom shows a fault's deciding value; with none shown, no text points at one
    said = (lambda text: text) if verdict == "fault" and deciding_finding(d) else unreferenced
    return Ticket(
        title=_title(verdict, cause, cause_title, _where(named, checked, host), bw, missing),
        fingerprint=print_id,
        labels=[LABEL, cause, print_id],
        verdict=verdict, headline=verdict_headline(verdict, ctx.get("source")), cause=cause, cause_title=cause_title,
        severity=severity, owner=owner,
        fabric=FABRICS.get(fabric, fabric),
        scope={"host": host, "slurm_job": extract.slurm_job(d), "nodes_checked": checked, "nodes_affected": affected},
        symptom=_symptom(d, deciding, bw),
        root_cause={"id": cause, "title": cause_title,
                    "summary": one_line(said(rc.get("summary") or "") if verdict == "fault" else
                                        healthy.get("summary", "") if verdict in (HEALTHY, NOT_APPLICABLE) else ""),
                    "confidence": confidence, "confidence_reason": why},
        path=[{"node": str(s.get("node")), "title": one_line(s.get("title") or s.get("node")), "kind": s.get("kind", "check"),
               "outcome": one_line(s.get("outcome")), "means": one_line(s.get("means")), "value": s.get("value"),
               "mark": _mark(s, deciding), "decides": [str(k) for k in s.get("decides") or []]} for s in d.get("path") or []],
        evidence=[{k: (row.get(k) if k == "observed" else one_line(row.get(k)))
                   for k in ("node", "fact", "observed", "expected", "source", "status", "reason")}
                  for row in d.get("evidence") or []],
        raw=_raw_blocks(d, deciding),
        secondary=[{"cause": one_line(f.get("cause")), "title": one_line(f.get("title")), "severity": one_line(f.get("severity")),
                    "owner": one_line(f.get("owner")), "node": one_line(f.get("node"))}
                   for f in findings if f.get("cause") != cause or verdict not in ("fault", "inconclusive")],
        fleet=fleet,
        candidates=[{"cause": one_line(f.get("cause")), "confidence": one_line(f.get("confidence")),
                     "supporting": [one_line(x) for x in f.get("supporting") or []][:4],
                     "contradicting": [one_line(x) for x in f.get("contradicting") or []][:4],
                     "next_step": one_line(f.get("next_step") or "")}
                    for f in findings if f.get("confidence")],
        remediation=[{"step": one_line(said(r.get("step"))), "owner": one_line(r.get("owner") or "-")}
                     for r in d.get("remediation") or []],
        verification=[one_line(said(v)) for v in d.get("verification") or []],
        next_steps=[one_line(s) for s in healthy.get("next_steps") or [] if isinstance(s, str)],
        inconclusive=[{"node": one_line(i.get("node")), "reason": one_line(i.get("reason"))} for i in d.get("inconclusive") or []],
        unanswered=[{"node": one_line(i.get("node")), "reason": one_line(i.get("reason"))} for i in d.get("unanswered") or []],
        bandwidth=bw,
        versions=extract.versions(d),
        provenance=_provenance(d),
        redacted=redacted,
        bundle=str(ctx["bundle"]) if ctx.get("bundle") else None,
        deciding=deciding,
    )
