"""The right-hand panels of the diagnosis screen, as Textual content markup: the selected node
(why, deciding evidence observed vs expected with its source, what the outcome means) and the
root cause (cause, severity, owner, remediation, verification, secondary findings).

Colours are theme variables ($text-error, ...) so dark and light themes both stay readable;
every badge also carries a word, so nothing depends on colour alone."""

from __future__ import annotations

from allreduce_doctor.oneline import deciding_finding, unreferenced
from allreduce_doctor.report import read_status, short, verdict_words
from allreduce_doctor.status import FAULT, HEALTHY, INCONCLUSIVE, NOT_APPLICABLE
from allreduce_doctor.tui.text import esc
from allreduce_doctor.tui.tree_model import BADGES, FAIL, NA, NOT_REACHED, PASS, UNKNOWN, NodeView

STATUS_STYLE = {PASS: "$text-success", FAIL: "$text-error b", UNKNOWN: "$text-warning b", NA: "$text-muted b",
                NOT_REACHED: "$text-muted"}
OBS_STYLE = {"ok": "$text-success", "missing": "$text-warning", "error": "$text-error", "not_applicable": "$text-muted"}
VERDICT_STYLE = {FAULT: "$text-error b", HEALTHY: "$text-success b", INCONCLUSIVE: "$text-warning b",
                 NOT_APPLICABLE: "$text-muted b"}


def badge(status: str) -> str:
    return f"[{STATUS_STYLE[status]}]\\[{BADGES[status]}][/]"


def _section(title: str) -> str:
    return f"\n[b $text-accent]{title}[/]"


def node_markup(v: NodeView) -> str:
    """The selected node: what it checks, why, the evidence, and what its outcome means."""
    out = [f"{badge(v.status)} [b]{esc(v.title)}[/]", f"[$text-muted]{esc(v.key)} · {v.kind}[/]"]
    if v.secondary:
        out.append("[$text-error]Off the path taken, but this check failed too: a secondary finding.[/]")
    if v.why:
        out += [_section("Why this is checked"), esc(v.why)]
    if v.summary:
        out += [_section("What it means"), esc(v.summary)]
    if v.check:
        out += [_section("Check"), f"[$text-primary]{esc(v.check)}[/]"]
    if v.ask:
        given = f"answered [b]{esc(v.answered)}[/]" if v.answered else "[$text-warning]not answered[/]"
        out.append(f"{esc(v.answer_name)}: {given} (choices: {esc(', '.join(v.choices))})")
    if v.status == NOT_REACHED:
        out += [_section("Outcome"), "[$text-muted]Not reached: the walk did not come here.[/]"]
    elif v.outcome is not None:
        out += [_section("Outcome"), f"[b]{esc(v.outcome)}[/]: {esc(v.means)}"]
    if v.evidence:
        out.append(_section("Deciding evidence (observed vs expected)"))
        for row in v.evidence:
            status = row.get("status") or "?"
            out.append(f"[b]{esc(row.get('fact'))}[/] [{OBS_STYLE.get(status, '$text-muted')}]{esc(read_status(status))}[/]")
            out.append(f"  observed: {esc(short(row.get('observed'), 300, collection=True))}")
            if row.get("expected"):
                out.append(f"  expected: {esc(row['expected'])}")
            out.append(f"  source:   {esc(row.get('source') or '-')}")
            if row.get("reason"):
                out.append(f"  [$text-warning]reason: {esc(row['reason'])}[/]")
    elif v.expected:
        out += [_section("Expected"), esc(v.expected)]
    if v.value not in (None, "", [], {}):
        out += [_section("Deciding value"), esc(short(v.value, 400, decides=v.decides))]
    if v.kind in ("check", "question") and v.status != NOT_REACHED or v.evidence:
        out.append("\n[$text-muted]r: raw value of the facts read here[/]")
    if v.branches:
        out.append(_section("Outcomes"))
        for b in v.branches:
            mark = "[b]>[/]" if b.taken else " "
            out.append(f"{mark} {esc(b.label)} -> {esc(b.target)}: [$text-muted]{esc(b.means)}[/]")
    return "\n".join(out)


def verdict_markup(d: dict, where: str) -> str:
    verdict = d.get("verdict", "inconclusive")
    rc = d.get("root_cause") or {}
    healthy = d.get("healthy") or {}
    head = f"[{VERDICT_STYLE.get(verdict, 'b')}]{verdict_words(d)}[/]"
    if rc:
        head += f": [b]{esc(rc['id'])}[/] ({esc(rc.get('severity'))}, owner {esc(rc.get('owner'))})"
    elif healthy.get("id") and verdict == HEALTHY:
        head += f": {esc(healthy['id'])}"
    fabric = (d.get("context") or {}).get("fabric") or "?"
    return f"{head}  [$text-muted]{esc(where)} ({esc(fabric)})[/]"


def _listed(out: list[str], title: str, lines: list[str]) -> None:
    """A titled section, only when it has lines."""
    if lines:
        out.append(_section(title))
        out += lines


def candidate_lines(d: dict) -> list[str]:
    """A paste's ranked candidates (findings with a confidence): the lines for and against, the next step."""
    out = []
    for i, f in enumerate((f for f in d.get("findings", []) if f.get("confidence")), 1):
        out.append(f"{i}. [b]{esc(f['cause'])}[/] ([b]{esc(f['confidence'])}[/] confidence): {esc(f.get('title', ''))}")
        out += [f"   [$text-success]for:[/]     {esc(line)}" for line in f.get("supporting") or []]
        out += [f"   [$text-error]against:[/] {esc(line)}" for line in f.get("contradicting") or []]
        if f.get("next_step"):
            out.append(f"   [b]next:[/]    {esc(f['next_step'])}")
    return out


def evidence_keys(symptom: str | None, ranked: bool) -> str:
    """The line under a paste's root cause: what was said, and the keys that add to it."""
    said = f"symptom [b]{esc(symptom)}[/]" if symptom else "symptom not said"
    return f"[$text-muted]{said} (s: change it)  ·  v: add a paste[/]" if ranked else "[$text-muted]v: add a paste[/]"


def cause_markup(d: dict) -> str:
    """The root cause (or healthy end), the fix, how to verify it, secondary findings."""
    rc = d.get("root_cause")
    healthy = d.get("healthy") or {}
    out = []
    if rc:
        out.append(f"[$text-error b]{esc(rc['id'])}[/]  {esc(rc.get('title', ''))}")
        out.append(f"severity [b]{esc(rc.get('severity'))}[/] · owner [b]{esc(rc.get('owner'))}[/] · at {esc(rc.get('node'))}")
        if rc.get("summary"):  # no deciding value to see: the summary does not point at one
            out += ["", esc(rc["summary"] if deciding_finding(d) else unreferenced(rc["summary"]))]
    elif healthy:  # a healthy end, or not_applicable (nothing judged: never the healthy style)
        style = VERDICT_STYLE.get(d.get("verdict", HEALTHY), VERDICT_STYLE[HEALTHY])
        out.append(f"[{style}]{esc(healthy.get('id'))}[/]  {esc(healthy.get('title', ''))}")
        if healthy.get("summary"):
            out += ["", esc(healthy["summary"])]
    else:
        out.append("[$text-warning b]No root cause named.[/]")
    _listed(out, "Candidates (most likely first)", candidate_lines(d))
    said = (lambda text: text) if deciding_finding(d) else unreferenced
    _listed(out, "Remediation", [f"{i}. \\[{esc(r.get('owner', '-'))}] {esc(said(r['step']))}"
                                 for i, r in enumerate(d.get("remediation") or [], 1)])
    _listed(out, "Verification", [f"- {esc(v)}" for v in d.get("verification") or []])
    _listed(out, "Next steps", [f"- {esc(s)}" for s in healthy.get("next_steps") or []])
    others = [f for f in d.get("findings", []) if not f.get("confidence") and (not rc or f.get("cause") != rc.get("id"))]
    _listed(out, "Secondary findings", [
        f"- [b]{esc(f['cause'])}[/] ({esc(f.get('severity'))}, owner {esc(f.get('owner'))}): {esc(f.get('title', ''))}"
        for f in others] or ["[$text-muted]none[/]"])
    _listed(out, "Inconclusive (missing evidence is never healthy)",
            [f"- {esc(i.get('node'))}: {esc(i.get('reason'))}" for i in d.get("inconclusive") or []])
    _listed(out, "Questions (a: answer)", [f"- {esc(q.get('node'))}: {esc(q.get('reason'))}" for q in d.get("unanswered") or []])
    return "\n".join(out)
