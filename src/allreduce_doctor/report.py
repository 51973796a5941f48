"""Render a Diagnosis (its JSON form) as a text or Markdown report."""

from __future__ import annotations

import json

from allreduce_doctor.busbw import phrase
from allreduce_doctor.status import HEALTHY, INCONCLUSIVE, READ_STATUS, STEP_BADGE, STEP_FAIL, STEP_PASS, STEP_UNKNOWN, VERDICT_HEADLINE

VERDICT_WORDS = {verdict: headline.upper() for verdict, headline in VERDICT_HEADLINE.items()}
MAX_VALUE = 160


# Item attributes that identify rather than decide; left out of compact renderings.
IDENTITY_KEYS = {"device", "port", "fw_ver", "hca_type", "pci_bdf", "netdev", "link_layer", "value",
                 "lid", "sm_lid", "source"}
# The attributes that decide a check, shown first so a cut line still names them: the port's rate
# and its peers', the GID index with its GID, type and netdev, the priority with PFC and ECN.
DECIDING_FIRST = ("rate_gbps", "expected_gbps", "width", "expected_width", "degraded", "state", "pinned", "index",
                  "gid", "kind", "type", "ndev", "recommended_index", "priority", "tc", "dscp", "trust",
                  "pfc_on_priority", "ecn_on_priority", "measured", "expected", "ratio")


def _label(item: dict) -> str:
    """What a record is called: its name, else the device or netdev it describes."""
    return str(next((item[k] for k in ("name", "netdev", "device", "file") if item.get(k)), "?"))


def _fields(item: dict) -> str:
    """The record's deciding attributes as key=value, nulls and nested detail left out."""
    order = {k: i for i, k in enumerate(DECIDING_FIRST)}
    parts = []
    for key in sorted(item, key=lambda k: order.get(k, len(order))):
        value = item[key]
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            value = value["name"]  # a state {code, name}: its name
        if key in IDENTITY_KEYS or key == "name" or key.startswith("_") or value is None or isinstance(value, (dict, list)):
            continue
        parts.append(f"{key}={json.dumps(value, default=str)}")
    return " ".join(parts)


def _names(key: str, items: list) -> str:
    names = [_label(i) for i in items]
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
            parts.append(f"{_label(item)}: {_fields(item)}")
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
    # The healthy outcome's id names a healthy end: it is not said of an inconclusive or n.a. verdict.
    suffix = f": {healthy['id']}" if healthy.get("id") and verdict == HEALTHY else ""
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


def step_badge(step: dict, deciding: set[str]) -> str:
    """The step's outcome for the node (pass / fail / unknown / n.a.); a finding's step fails."""
    if step.get("node") in deciding:
        return STEP_FAIL
    if step.get("badge"):
        return step["badge"]
    return STEP_UNKNOWN if step.get("outcome") == "unknown" else STEP_PASS  # a Diagnosis from before badges


def read_status(status) -> str:
    """An evidence row's read status, worded apart from any verdict."""
    return READ_STATUS.get(str(status), str(status or "-"))


def render_text(d: dict) -> str:
    """The on-call view: verdict, why, the deciding evidence, the fix, how to verify."""
    out = [_headline(d), *(f"warning: {w}" for w in d.get("warnings") or []), "", _verdict_line(d)]
    rc = _outcome(d)
    if rc.get("title") and rc["title"] != VERDICT_HEADLINE.get(d.get("verdict")):
        out.append(f"  {rc['title']}")
    if rc.get("summary"):
        out.append(f"  {' '.join(rc['summary'].split())}")
    if d.get("bandwidth"):
        out.append(f"  Bandwidth: {phrase(d['bandwidth'], bool(d.get('root_cause')))}")
    deciding = {f.get("node") for f in d.get("findings", [])}
    out += ["", "Decision path:"]
    for step in d.get("path", []):
        # Titles state the healthy expectation; the outcome's meaning says what was found.
        badge = step_badge(step, deciding)
        out.append(f"  [{STEP_BADGE.get(badge, badge)}] {step.get('title') or step['node']}")
        if badge != STEP_PASS:
            out.append(f"         -> {step.get('means', '')}")
            if step.get("value") not in (None, "", [], {}):
                out.append(f"         value: {short(step['value'])}")
    rows = [r for r in d.get("evidence", []) if r.get("node") in deciding]
    if rows:
        out += ["", "Evidence:"]
        for row in rows:
            exp = f" (expected: {row['expected']})" if row.get("expected") else ""
            out.append(f"  {row.get('fact')}: {short(row.get('observed'), 100, collection=True)}{exp}")
            out.append(f"      {read_status(row.get('status'))} from {_source(row.get('source'))}")
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


def _md_cell(value, collection: bool = False) -> str:
    return short(value, 120, collection).replace("|", "\\|")


def render_markdown(d: dict) -> str:
    out = [f"# {_verdict_line(d)}", "", *(f"> **warning:** {w}" for w in d.get("warnings") or []), f"_{_headline(d)}_", ""]
    rc = _outcome(d)
    if rc.get("summary"):
        out += [" ".join(rc["summary"].split()), ""]
    if d.get("bandwidth"):
        out += [f"**Bandwidth:** {phrase(d['bandwidth'], bool(d.get('root_cause')))}", ""]
    deciding = {f.get("node") for f in d.get("findings", [])}
    out += ["## Decision path", "", "| step | result | outcome | value |", "|---|---|---|---|"]
    for step in d.get("path", []):
        out.append(f"| {_md_cell(step.get('title') or step['node'])} | {step_badge(step, deciding)} | {step.get('outcome')} "
                   f"| {_md_cell(step.get('value'))} |")
    if d.get("evidence"):
        out += ["", "## Evidence", "", "| fact | observed | expected | read | source |", "|---|---|---|---|---|"]
        for row in d["evidence"]:
            out.append(f"| {row.get('fact')} | {_md_cell(row.get('observed'), True)} | {_md_cell(row.get('expected'))} "
                       f"| {read_status(row.get('status'))} | {_md_cell(row.get('source'))} |")
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
