"""The ticket as a list of neutral blocks; each format (Markdown, Jira wiki, ADF) only draws them.

Blocks: ("heading", level, spans), ("para", spans), ("table", header, rows), ("bullets", items),
("numbered", items), ("panel", kind, blocks), ("raw", summary, text).
Spans: ("text" | "strong" | "code", text); items and cells are lists of spans.
Panel kinds are ADF's: info, note, warning, error, success.

fit() keeps a document under a size limit by leaving out, in turn, raw evidence of passing checks,
evidence rows and path values of passing checks, and last the deciding values; the document says
what it left out and where the full values are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from allreduce_doctor.oneline import observed_text, read_status, short
from allreduce_doctor.status import STEP_PASS, VERDICT_HEADLINE

from .ticket import RawBlock, Ticket

CELL = 120  # characters of a value shown in a table cell; the rest is in the raw evidence
ROW_CAP = 200
PANELS = {"critical": "error", "major": "warning", "minor": "note", "none": "success"}
VERDICT_WORDS = VERDICT_HEADLINE


def T(text) -> tuple:  # noqa: N802 - short names keep the layout readable
    return ("text", str(text))


def B(text) -> tuple:  # noqa: N802
    return ("strong", str(text))


def C(text) -> tuple:  # noqa: N802
    return ("code", str(text))


def escape_each(text: str, rule: Callable[[str, str, str], str]) -> str:
    """text with each character replaced by rule(char, previous, next); the edges count as spaces."""
    padded = f" {text} "
    return "".join(rule(padded[i], padded[i - 1], padded[i + 1]) for i in range(1, len(padded) - 1))


def _value(value, collection: bool = False, decides=()) -> list:
    return [T(short(value, CELL, collection, decides))] if value not in (None, "", [], {}) else [T("-")]


def _head(ticket: Ticket) -> list:
    verdict = ticket.headline or VERDICT_WORDS.get(ticket.verdict, ticket.verdict)
    kind = PANELS.get(ticket.severity, "info") if ticket.verdict != "inconclusive" else "info"
    inner = [("para", [B(f"{verdict}: "), C(ticket.cause), T(f" ({ticket.cause_title})")])]
    if ticket.root_cause["summary"]:
        inner.append(("para", [T(ticket.root_cause["summary"])]))
    scope = ticket.scope
    affected = scope["nodes_affected"]
    nodes = f"{len(affected)} of {scope['nodes_checked']} checked" + (f": {', '.join(affected[:20])}" if affected else "")
    if len(affected) > 20:
        nodes += f", +{len(affected) - 20} more"
    rows = [("Verdict", [T(ticket.verdict)]), ("Root cause", [C(ticket.cause)]), ("Severity", [T(ticket.severity)]),
            ("Owner team", [T(ticket.owner)]),
            ("Confidence", [T(f"{ticket.root_cause['confidence']}: {ticket.root_cause['confidence_reason']}")]),
            ("Fabric", [T(ticket.fabric)]), ("Host", [T(scope["host"])]),
            ("Slurm job", [T(scope["slurm_job"] or "not known")]), ("Nodes affected", [T(nodes)])]
    if ticket.bandwidth:
        bw = ticket.bandwidth
        expected = f"{bw['expected']:g} GB/s" if bw.get("expected") else "unknown"
        note = "".join(f"; {bw[k]}" for k in ("note", "hardware_note") if bw.get(k))
        rows.append(("Bus bandwidth", [T(f"measured {bw['measured']:g} GB/s, expected {expected}{note}")]))
    rows.append(("Fingerprint", [C(ticket.fingerprint)]))
    return [("panel", kind, inner), ("table", ["field", "value"], [[[T(k)], v] for k, v in rows])]


@dataclass
class Cut:
    """What fit() has left out so far."""

    kept: list[RawBlock]
    dropped: list[RawBlock] = field(default_factory=list)
    row_cap: int = ROW_CAP  # evidence rows of passing checks shown
    lean: bool = False  # the decision path without the values and meanings of passing checks
    bare: bool = False  # the decision path without the rows of passing checks (last resort)


PASSED = ("ok", STEP_PASS)  # the marks of a check that passed (older Diagnoses say "ok")


def _diagnosis(ticket: Ticket, lean: bool = False, bare: bool = False) -> list:
    rc = ticket.root_cause
    out: list[tuple] = [("heading", 2, [T("Symptom")]), ("bullets", [[T(s)] for s in ticket.symptom])]
    out += [("heading", 2, [T("Root cause")]), ("para", [C(rc["id"]), T(f": {rc['title']}")])]
    if rc["summary"]:
        out.append(("para", [T(rc["summary"])]))
    out.append(("para", [B("Confidence: "), T(f"{rc['confidence']} ({rc['confidence_reason']})")]))
    if ticket.candidates:  # a paste's differential: the likely causes in order, and what tells them apart
        rows = [[[T(str(i))], [C(c["cause"])], [T(c["confidence"])], [T("; ".join(c["supporting"]) or "-")],
                 [T("; ".join(c["contradicting"]) or "-")], [T(c["next_step"] or "-")]]
                for i, c in enumerate(ticket.candidates, 1)]
        out += [("heading", 2, [T("Candidates")]),
                ("table", ["#", "cause", "confidence", "for", "against", "next step"], rows)]
    steps = [s for s in ticket.path if not (bare and s["mark"] in PASSED)]
    rows = [[[T(s["mark"])], [T(s["title"])], [T(s["outcome"])]]
            + ([[T("-")], [T("-")]] if lean and s["mark"] in PASSED
               else [[T(s["means"] or "-")], _value(s["value"], decides=s.get("decides"))])
            for s in steps]
    out += [("heading", 2, [T("Decision path")]),
            ("table", ["result", "check", "outcome", "what it means", "deciding value"], rows)]
    if bare:
        out.append(("para", [T(f"{len(ticket.path) - len(steps)} passing checks are left out to stay under the size "
                               "limit: "), C("allreduce-doctor export --to json"), T(" has the whole path.")]))
    elif lean:
        out.append(("para", [T("The meanings and values of passing checks are left out to stay under the size limit: "),
                             C("allreduce-doctor export --to json"), T(" has them.")]))
    return out


def _evidence(ticket: Ticket, row_cap: int) -> list:
    # When space runs out the rows of the deciding checks stay, then the first ones, in order.
    spare = row_cap - sum(1 for r in ticket.evidence if r["node"] in ticket.deciding)
    shown = []
    for r in ticket.evidence:
        if r["node"] in ticket.deciding or spare > 0:
            spare -= r["node"] not in ticket.deciding
            shown.append(r)
    witnesses = ticket.witnesses()
    rows = [[[C(r["node"])], [C(r["fact"])], [T(observed_text(r, witnesses, CELL))] if r["observed"] not in (None, "", [], {})
             else [T("-")], [T(r["expected"] or "-")],
             [T(short(r["source"], CELL) if r["source"] else "-")],
             [T(read_status(r["status"]) + (f": {r['reason']}" if r["reason"] else ""))]]
            for r in shown]
    out: list[tuple] = [("heading", 2, [T("Evidence")]),
           ("table", ["check", "fact", "observed", "expected", "source", "read"], rows)]
    if len(shown) < len(ticket.evidence):
        out.append(("para", [T(f"{len(ticket.evidence) - len(shown)} more evidence rows (of checks that passed) "
                               "are in the JSON export: "), C("allreduce-doctor export --to json"), T(".")]))
    return out


def _fleet(ticket: Ticket) -> list:
    fleet = ticket.fleet
    if not fleet:
        return []
    names = ", ".join(fleet["nodes_affected"][:20]) or "none"
    rows = []
    for row in fleet["settings"][:ROW_CAP]:
        odd = ", ".join(f"{node}={short(value, 40)}" for node, value in row["odd"][:20])
        odd += f", +{len(row['odd']) - 20} more" if len(row["odd"]) > 20 else ""
        rows.append([[C(row["key"])], _value(row["majority"]), [T(odd or "-")]])
    return [("heading", 2, [T("Fleet comparison")]),
            ("para", [T(f"{fleet['nodes_checked']} nodes checked, {len(fleet['nodes_affected'])} affected: {names}.")]),
            ("table", ["setting", "majority value", "odd nodes"], rows)]


def _section(title: str, kind: str, items: list) -> list:
    return [("heading", 2, [T(title)]), (kind, items)] if items else []


def _actions(ticket: Ticket) -> list:
    return (_section("Secondary findings", "bullets",
                     [[C(f["cause"]), T(f" ({f['severity']}, owner: {f['owner']}): {f['title']}")] for f in ticket.secondary])
            + _section("Remediation", "numbered", [[B(r["owner"]), T(f": {r['step']}")] for r in ticket.remediation])
            + _section("Verification", "bullets", [[T(v)] for v in ticket.verification])
            + _section("Next steps", "bullets", [[T(s)] for s in ticket.next_steps])
            + _section("Inconclusive (missing evidence is never counted as healthy)", "bullets",
                       [[C(i["node"]), T(f": {i['reason']}")] for i in ticket.inconclusive])
            + _section("Unanswered questions", "bullets", [[C(i["node"]), T(f": {i['reason']}")] for i in ticket.unanswered]))


def _records(ticket: Ticket) -> list:
    redacted = ticket.redacted
    said = [T("Nothing in this diagnosis matched; no value was changed.")]
    if redacted:
        said = [T(f"{len(redacted)} value(s) replaced by <redacted> in this ticket, at: ")]
        for i, place in enumerate(redacted[:20]):
            said += ([T(", ")] if i else []) + [C(place)]
        said.append(T(f", +{len(redacted) - 20} more." if len(redacted) > 20 else "."))
    return [("heading", 2, [T("Versions")]),
            ("table", ["component", "version"], [[[T(k)], [T(v)]] for k, v in ticket.versions]),
            ("heading", 2, [T("Provenance")]),
            ("table", ["field", "value"], [[[T(k)], [T(v)]] for k, v in ticket.provenance]),
            ("heading", 2, [T("Redaction")]),
            ("para", [T("Process environments are filtered on the node to the variables that matter to NCCL "
                        "(NCCL_*, UCX_*, CUDA_*, ...). Before this ticket was written, every value passed the "
                        f"snapshot redaction again: {ticket.redaction_rules}.")]),
            ("para", said)]


def _raw(ticket: Ticket, kept: list[RawBlock], dropped: list[RawBlock], limit: int) -> list:
    if not ticket.raw:
        return []
    out: list[tuple] = [("heading", 2, [T("Raw evidence")])]
    for block in kept:
        out.append(("raw", f"{block.fact} (used by {', '.join(block.nodes) or '-'}, {len(block.text):,} characters)", block.text))
    if dropped:
        names = ", ".join(f"{b.fact} ({len(b.text):,} characters)" for b in dropped)
        where = f"the snapshot bundle ({ticket.bundle}), " if ticket.bundle else ""
        out.append(("para", [T(f"Left out to stay under the {limit:,}-character limit: {names}. "
                               f"Full values: {where}"), C("allreduce-doctor export --to json"), T(".")]))
    return out


def layout(ticket: Ticket, cut: Cut, limit: int, intro: list | None = None) -> list:
    return (([("para", intro)] if intro else []) + _head(ticket) + _diagnosis(ticket, cut.lean, cut.bare)
            + _evidence(ticket, cut.row_cap) + _fleet(ticket) + _actions(ticket) + _records(ticket)
            + _raw(ticket, cut.kept, cut.dropped, limit))


def again(ticket: Ticket) -> list:
    """The first line of a comment on an open ticket with the same fingerprint."""
    source = dict(ticket.provenance)
    return [B("Seen again"), T(f" by allreduce-doctor on {ticket.scope['host']} ({source['source']}, {source['when']}): "
                               "the same fingerprint "), C(ticket.fingerprint), T(", so this is a comment, not a new ticket.")]


def fit(ticket: Ticket, draw: Callable[[list], str], limit: int, intro: list | None = None, cut_note: str = "") -> str:
    """The drawn document, shortened until it is at most limit characters. When nothing is left to
    leave out, a text format is cut at the limit with cut_note; a structured one comes back whole."""
    cut = Cut(list(ticket.raw))
    while True:
        text = draw(layout(ticket, cut, limit, intro))
        if len(text) <= limit:
            return text
        # order of sacrifice: raw values of passing checks, the deciding check's whole evidence,
        # evidence rows of passing checks, the passing steps' values, and last the deciding witnesses
        spare = [b for b in cut.kept if b.priority > 0] or (cut.kept if cut.lean else [])
        if spare:
            # biggest first, one at a time; with many, a batch worth the excess (fewer renders)
            excess = len(text) - limit if len(spare) > 16 else 0
            for victim in sorted(spare, key=lambda b: (-b.priority, -len(b.text))):
                cut.kept.remove(victim)
                cut.dropped.append(victim)
                excess -= len(victim.text)
                if excess <= 0:
                    break
        elif cut.row_cap > 0:
            cut.row_cap = min(cut.row_cap, len(ticket.evidence)) * 3 // 4
        elif not cut.lean:
            cut.lean = True
        elif not cut.bare:
            cut.bare = True
        else:
            return text[: limit - len(cut_note)] + cut_note if cut_note else text
