"""Render a Diagnosis (its JSON form) as a text report, JSON, metrics, or the Markdown document.

`--format markdown` is the ticket exporter's Markdown document (`--export markdown`): one
Markdown rendering of a diagnosis, not two.
"""

from __future__ import annotations

import json

from allreduce_doctor.busbw import phrase
from allreduce_doctor.oneline import deciding_finding, observed_text, read_status, short, step_badge, unreferenced, value_lines  # noqa: F401 - the views import them from here too
from allreduce_doctor.sanitize import fields
from allreduce_doctor.status import HEALTHY, INCONCLUSIVE, STEP_BADGE, STEP_NA, STEP_PASS, VERDICT_HEADLINE, verdict_headline

VERDICT_WORDS = {verdict: headline.upper() for verdict, headline in VERDICT_HEADLINE.items()}


def verdict_words(d: dict) -> str:
    """A diagnosis's verdict as its headline words, upper-case (pasted text alone names no node)."""
    return verdict_headline(d.get("verdict", "inconclusive"), (d.get("context") or {}).get("source")).upper()


def setting_value(value) -> str:
    """A compared setting's value (the fleet's): text quoted, a per-port mapping as port=value."""
    if isinstance(value, dict):  # per-port: only the odd ports
        return " ".join(f"{port}={setting_value(v)}" for port, v in value.items())
    return short(value, 100) if not isinstance(value, str) else json.dumps(value)


def _headline(d: dict) -> str:
    ctx = d.get("context") or {}
    where = f"bundle {ctx.get('bundle')}" if ctx.get("bundle") else ctx.get("source", "live")
    return (f"allreduce-doctor {ctx.get('tool_version', '')} | host {ctx.get('host') or '?'} ({where}) "
            f"| fabric {ctx.get('fabric') or '?'}")


def _verdict_line(d: dict) -> str:
    verdict = d.get("verdict", "inconclusive")
    rc = d.get("root_cause")
    if rc:
        on = f" on {', '.join(rc['hosts'])}" if rc.get("hosts") else ""  # a paste of several hosts: the worst host's
        return f"{verdict_words(d)}: {rc['id']}{on} ({rc.get('severity')}, owner: {rc.get('owner')})"
    healthy = d.get("healthy") or {}
    # The healthy outcome's id names a healthy end: it is not said of an inconclusive or n.a. verdict.
    suffix = f": {healthy['id']}" if healthy.get("id") and verdict == HEALTHY else ""
    return f"{verdict_words(d)}{suffix}"


def _evidence_used(used: dict | None) -> list[str]:
    """What the verdict rests on when pasted evidence was read: segments and unplaced lines."""
    if not used:
        return []
    out = ["", "Evidence read:"]
    for f in used.get("files", []):
        kinds = ", ".join(f"{seg['kind']} (lines {seg['lines']})" for seg in f.get("segments", [])[:8])
        out.append(f"  {f.get('file')}: {f.get('recognized_lines', 0)} of {f.get('lines', 0)} lines recognized"
                   + (f": {kinds}" if kinds else ""))
        unplaced = (f.get("unplaced") or {}).get("count", 0)
        if unplaced:
            out.append(f"    {unplaced} lines not placed, e.g. {short((f['unplaced'].get('examples') or [''])[0], 80)}")
    for t in used.get("tool_outputs") or []:  # a tool's output the parser refused: said, never silently dropped
        if t.get("error"):
            out.append(f"  not read: {t['tool']} at {t['lines']}: {t['error']}")
    return out


def render_text(d: dict) -> str:
    """The on-call view: verdict, why, the deciding evidence, the fix, how to verify."""
    out = [_headline(d), *(f"warning: {w}" for w in d.get("warnings") or []), "", _verdict_line(d)]
    if (d.get("context") or {}).get("needs_root"):
        out.append(f"  PARTIAL: not seen without root: {', '.join(d['context']['needs_root'])}; run as root for the whole check")
    rc = _outcome(d)
    if rc.get("title") and rc["title"] != VERDICT_HEADLINE.get(d.get("verdict", "")):
        out.append(f"  {rc['title']}")
    decided = deciding_finding(d)
    said = (lambda text: text) if decided else unreferenced  # no deciding value shown: no text points at one
    if rc.get("summary"):
        out.append(f"  {' '.join(said(rc['summary']).split())}")
    if d.get("bandwidth"):
        out.append(f"  Bandwidth: {phrase(d['bandwidth'], bool(d.get('root_cause')))}")
    if decided:  # the facts that decided it, whole: every key a text of the cause names is among them
        shown: dict = next((s for s in d.get("path", []) if s.get("node") == decided.get("node")), {})
        out += ["", f"Deciding value ({shown.get('title') or decided.get('node')}):"]
        out += [f"  {line}" for line in value_lines(decided["value"], shown.get("decides"))]
    deciding = {f.get("node") for f in d.get("findings", [])}
    out += ["", "Decision path:"]
    for step in d.get("path", []):
        # Titles state the healthy expectation; the outcome's meaning says what was found.
        badge = step_badge(step, deciding)
        out.append(f"  [{STEP_BADGE.get(badge, badge)}] {step.get('title') or step['node']}")
        if badge != STEP_PASS:
            out.append(f"         -> {step.get('means', '')}")
            # n.a.: nothing to judge (no such hardware, no such line), so no value to show
            if badge != STEP_NA and step.get("value") not in (None, "", [], {}):
                out.append(f"         value: {short(step['value'], decides=step.get('decides'))}")
    rows = [r for r in d.get("evidence", []) if r.get("node") in deciding]
    witnesses = {f.get("node"): f.get("value") for f in d.get("findings", [])}
    if rows:
        out += ["", "Evidence:"]
        for row in rows:
            exp = f" (expected: {row['expected']})" if row.get("expected") else ""
            out.append(f"  {row.get('fact')}: {observed_text(row, witnesses)}{exp}")
            out.append(f"      {read_status(row.get('status'))} from {_source(row.get('source'))}")
    ranked = [f for f in d.get("findings", []) if f.get("confidence")]
    if ranked:
        out += ["", "Candidates (most likely first):"]
        for i, f in enumerate(ranked, 1):
            out.append(f"  {i}. {f['cause']} ({f['confidence']} confidence): {f.get('title', '')}")
            out += [f"       for:     {line}" for line in f.get("supporting") or []]
            out += [f"       against: {line}" for line in f.get("contradicting") or []]
            if f.get("next_step"):
                out.append(f"       next:    {f['next_step']}")
    findings = [f for f in d.get("findings", []) if not f.get("confidence") and (not rc or f.get("cause") != rc.get("id"))]
    if findings:
        out += ["", "Also found (secondary findings):"]
        out += [f"  - {f['cause']} ({f.get('severity')}, owner: {f.get('owner')}): {f.get('title', '')}"
                + (f" (on {', '.join(f['hosts'])})" if f.get("hosts") else "") for f in findings]  # pasted hosts
    if d.get("remediation"):
        out += ["", "Fix:"]
        out += [f"  {i}. [{r.get('owner', '-')}] {said(r['step'])}" for i, r in enumerate(d["remediation"], 1)]
    if d.get("verification"):
        out += ["", "Verify the fix:"]
        out += [f"  - {said(v)}" for v in d["verification"]]
    healthy = d.get("healthy") or {}
    if healthy.get("next_steps"):
        out += ["", "Next steps:"]
        out += [f"  - {s}" for s in healthy["next_steps"]]
    if d.get("inconclusive"):
        out += ["", "Inconclusive (missing evidence is never counted as healthy):"]
        out += [f"  - {i.get('node')}: {i.get('reason')}" for i in d["inconclusive"]]
    out += _evidence_used(d.get("evidence_used"))
    if d.get("unanswered"):
        out += ["", "Questions (answer with --answer NAME=CHOICE):"]
        out += [f"  - {q.get('node')}: {q.get('reason')}" for q in d["unanswered"]]
    out += ["", "Full evidence for every step: --format json (or markdown)."]
    return "\n".join(out) + "\n"


def _outcome(d: dict) -> dict:
    """The root cause, or the healthy end when the verdict is that end's; an inconclusive walk that
    reached a healthy leaf did not find the node healthy, so it gets its own words."""
    if d.get("root_cause"):
        return d["root_cause"]
    if d.get("verdict") == INCONCLUSIVE:
        n = len(d.get("inconclusive") or [])
        return {"summary": f"No fault found, but {n} check{'s' if n != 1 else ''} could not be decided (listed under "
                           "Inconclusive): missing evidence is not a healthy node."}
    return d.get("healthy") or {}


def _source(source) -> str:
    parts = [p.strip() for p in str(source or "-").split(", ")]
    return parts[0] + (f" (+{len(parts) - 1} more)" if len(parts) > 1 else "")


def render(d: dict, fmt: str) -> str:
    d = fields(d) if fmt in ("text", "markdown") else d  # one field, one line: no forged report line
    if fmt == "json":
        return json.dumps(d, indent=2, sort_keys=True, default=str) + "\n"
    if fmt == "markdown":
        from allreduce_doctor.export import render_export

        return render_export(d, "markdown")
    if fmt == "prometheus":
        from allreduce_doctor.metrics.prometheus import render_prometheus

        return render_prometheus(d)
    if fmt == "npd":
        from allreduce_doctor.metrics.npd import render_npd

        return render_npd(d)
    return render_text(d)
