"""Render a Diagnosis (its JSON form) as a text or Markdown report."""

from __future__ import annotations

import json

from allreduce_doctor.sanitize import fields
from allreduce_doctor.status import VERDICT_HEADLINE

VERDICT_WORDS = {verdict: headline.upper() for verdict, headline in VERDICT_HEADLINE.items()}
MAX_VALUE = 160


# Item attributes that identify rather than decide; left out of compact renderings.
IDENTITY_KEYS = {"device", "port", "fw_ver", "hca_type", "pci_bdf", "netdev", "link_layer", "value"}


def _names(key: str, items: list) -> str:
    names = [str(i.get("name", "?")) for i in items]
    listed = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return f"{key}{': ' if key else ''}{len(names)} checked ({listed})"


def _records(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(i, dict) for i in value)


def _compact(value, collection: bool = False):
    """Witness records become 'name: key=value ...'; whole collections become their names."""
    if isinstance(value, dict) and len(value) == 1:
        (key, inner), = value.items()
        if _records(inner):
            return _names(key, inner)
    if collection and _records(value):
        return _names("", value)
    if isinstance(value, list) and value and all(isinstance(i, dict) for i in value):
        parts = []
        for item in value[:4]:
            fields = " ".join(f"{k}={json.dumps(v, default=str)}" for k, v in item.items()
                              if k not in IDENTITY_KEYS and k != "name" and not k.startswith("_")
                              and not isinstance(v, (dict, list)))
            parts.append(f"{item.get('name', '?')}: {fields}")
        more = f" (+{len(value) - 4} more)" if len(value) > 4 else ""
        return "; ".join(parts) + more
    return value


def short(value, limit: int = MAX_VALUE, collection: bool = False) -> str:
    """A one-line rendering of a deciding value (collection: the value is a whole fact)."""
    if value is None:
        return "-"
    value = _compact(value, collection)
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
        return f"{VERDICT_WORDS.get(verdict, verdict.upper())}: {rc['id']} ({rc.get('severity')}, owner: {rc.get('owner')})"
    healthy = d.get("healthy") or {}
    suffix = f": {healthy['id']}" if healthy.get("id") else ""
    return f"{VERDICT_WORDS.get(verdict, verdict.upper())}{suffix}"


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
    return out


def _step_mark(step: dict, deciding: set[str]) -> str:
    if step.get("node") in deciding:
        return "FAIL"
    return {"unknown": " ?? "}.get(step.get("outcome"), " ok ")


def render_text(d: dict) -> str:
    """The on-call view: verdict, why, the deciding evidence, the fix, how to verify."""
    out = [_headline(d), "", _verdict_line(d)]
    if (d.get("context") or {}).get("needs_root"):
        out.append(f"  PARTIAL: not seen without root: {', '.join(d['context']['needs_root'])}; run as root for the whole check")
    rc = d.get("root_cause") or d.get("healthy") or {}
    if rc.get("title"):
        out.append(f"  {rc['title']}")
    if rc.get("summary"):
        out.append(f"  {' '.join(rc['summary'].split())}")
    deciding = {f.get("node") for f in d.get("findings", [])}
    out += ["", "Decision path:"]
    for step in d.get("path", []):
        # Titles state the healthy expectation; the outcome's meaning says what was found.
        out.append(f"  [{_step_mark(step, deciding)}] {step.get('title') or step['node']}")
        if step.get("node") in deciding or step.get("outcome") not in ("yes", "no"):
            out.append(f"         -> {step.get('means', '')}")
            if step.get("value") not in (None, "", [], {}):
                out.append(f"         value: {short(step['value'])}")
    rows = [r for r in d.get("evidence", []) if r.get("node") in deciding]
    if rows:
        out += ["", "Evidence:"]
        for row in rows:
            exp = f" (expected: {row['expected']})" if row.get("expected") else ""
            out.append(f"  {row.get('fact')}: {short(row.get('observed'), 100, collection=True)}{exp}")
            out.append(f"      [{row.get('status')}] {_source(row.get('source'))}")
    findings = [f for f in d.get("findings", []) if not rc or f.get("cause") != rc.get("id")]
    if findings:
        out += ["", "Also found (secondary findings):"]
        out += [f"  - {f['cause']} ({f.get('severity')}, owner: {f.get('owner')}): {f.get('title', '')}" for f in findings]
    if d.get("remediation"):
        out += ["", "Fix:"]
        out += [f"  {i}. [{r.get('owner', '-')}] {r['step']}" for i, r in enumerate(d["remediation"], 1)]
    if d.get("verification"):
        out += ["", "Verify the fix:"]
        out += [f"  - {v}" for v in d["verification"]]
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


def _source(source) -> str:
    parts = [p.strip() for p in str(source or "-").split(", ")]
    return parts[0] + (f" (+{len(parts) - 1} more)" if len(parts) > 1 else "")


def _md_cell(value, collection: bool = False) -> str:
    return short(value, 120, collection).replace("|", "\\|")


def render_markdown(d: dict) -> str:
    out = [f"# {_verdict_line(d)}", "", f"_{_headline(d)}_", ""]
    rc = d.get("root_cause") or d.get("healthy") or {}
    if rc.get("summary"):
        out += [" ".join(rc["summary"].split()), ""]
    out += ["## Decision path", "", "| step | outcome | value |", "|---|---|---|"]
    for step in d.get("path", []):
        out.append(f"| {_md_cell(step.get('title') or step['node'])} | {step.get('outcome')} | {_md_cell(step.get('value'))} |")
    if d.get("evidence"):
        out += ["", "## Evidence", "", "| fact | observed | expected | source |", "|---|---|---|---|"]
        for row in d["evidence"]:
            out.append(f"| {row.get('fact')} | {_md_cell(row.get('observed'), True)} | {_md_cell(row.get('expected'))} | {_md_cell(row.get('source'))} |")
    findings = [f for f in d.get("findings", []) if not rc or f.get("cause") != rc.get("id")]
    if findings:
        out += ["", "## Secondary findings", ""] + [f"- `{f['cause']}` ({f.get('severity')}): {f.get('title', '')}" for f in findings]
    if d.get("remediation"):
        out += ["", "## Fix", ""] + [f"{i}. **{r.get('owner', '-')}**: {r['step']}" for i, r in enumerate(d["remediation"], 1)]
    if d.get("verification"):
        out += ["", "## Verification", ""] + [f"- {v}" for v in d["verification"]]
    healthy = d.get("healthy") or {}
    if healthy.get("next_steps"):
        out += ["", "## Next steps", ""] + [f"- {s}" for s in healthy["next_steps"]]
    if d.get("inconclusive"):
        out += ["", "## Inconclusive", ""] + [f"- `{i.get('node')}`: {i.get('reason')}" for i in d["inconclusive"]]
    return "\n".join(out) + "\n"


def render(d: dict, fmt: str) -> str:
    d = fields(d) if fmt in ("text", "markdown") else d  # one field, one line: no forged report line
    if fmt == "json":
        return json.dumps(d, indent=2, sort_keys=True, default=str) + "\n"
    if fmt == "markdown":
        return render_markdown(d)
    if fmt == "prometheus":
        from allreduce_doctor.metrics.prometheus import render_prometheus

        return render_prometheus(d)
    if fmt == "npd":
        from allreduce_doctor.metrics.npd import render_npd

        return render_npd(d)
    return render_text(d)
