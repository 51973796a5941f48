"""The ranked differential of an evidence-only run: up to three candidate causes, best first.

Pasted text is rarely decisive: a retry-exceeded completion has four or five possible causes.
From what the walk decided and what the text's signatures say happened, this ranks the likely
causes, each with a confidence, the lines that support it and those that speak against it, and
the one paste or command that tells it from the others (the catalogue's `paste` unless the line adds
to it). `root_cause` is the first candidate;
`findings` is the ordered list. A paste is never "healthy": with no candidate the Diagnosis says
that nothing in the text points at a cause, and what to collect.

Scoring: each signature kind found adds to its candidate causes by their rank in
signatures/candidates.yaml (the prior), twice for a kind the job fails on, half for a generic
kind (ncclSystemError, a remote rank leaving: consequences of something else). A cause the
runbooks decided from the text comes first. The reporter's symptom (evidence/symptom.py, derived
once) favours the causes whose catalogue `shows` holds it; a pasted stack of a rank waiting in NCCL
(signatures.yaml hang_in_*) or PyTorch's watchdog timeout weighs like a consequence (a frame says
where, not why), and a job the text shows on one host drops the causes the catalogue marks
`between_hosts`. What the text leaves open also counts: a topology whose GPUs reach no NIC
within NCCL's GPUDirect RDMA distance, or a slow job whose log never names its network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from allreduce_doctor.evidence import gaps, report_words, signatures, suspects, symptom, tool_facts
from allreduce_doctor.evidence.differential_steps import (
    UNSHOWN,
    bootstrapped,
    contradicted,
    field_sources,
    open_questions,
    step_sources,
    unshown,
)
from allreduce_doctor.evidence.kinds import CONTEXT, CRASHES, GENERIC, HANG_FRAMES, KERNEL_CHECKS
from allreduce_doctor.runbook.diagnosis import Diagnosis, Finding
from allreduce_doctor.runbook.model import RunbookSet
from allreduce_doctor.status import INCONCLUSIVE

__all__ = ["COLLECT", "UNSHOWN", "Paste", "rank", "usual_suspects"]

MAX_CANDIDATES = 3
WORDS_NODE = "evidence.report_words"  # a candidate read from the report's words only
RANK_WEIGHT = (3.0, 2.0, 1.0, 1.0)
SUSPECT_DECAY = 0.6  # each usual suspect's score after the one before it (< 1/1.5, the symptom's weight)
# What a bootstrap over TCP that reached every rank across hosts rules out (init.cc prints Init COMPLETE after
# initTransportsRank's bootstrapAllGather of every rank's peer info, v2.4.8-1 to v2.30.7-1; bootstrap.cc connects
# each rank to the next over NCCL's socket interface): an interface the peers cannot reach, a firewall on
# NCCL's ports, a container network that isolates the hosts.
BOOTSTRAPPED = ("wrong_socket_ifname", "socket_blocked", "container_network_isolation")
COLLECT = ("nothing in this text points at a cause; paste the NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET output "
           "of one failing rank, `ibstat`, `show_gids` and the all_reduce_perf table")


@dataclass
class Paste:
    """What the ranking reads of one pasted text: log.nccl, rdma.compute_ports and log.job (its scope: a job
    the text shows on one host drops the causes that need two), what the reporter told (--symptom) and the
    measured busbw (busbw.summary), from which the symptom is derived once."""
    nccl: dict | None = None
    ports: list | None = None
    job: dict | None = None
    told: str | None = None
    bandwidth: dict | None = None
    facts: Any = None  # the observations the walk read


@dataclass
class Tally:
    """The candidates so far: score, supporting lines and next step of each, in the order first seen."""
    scores: dict[str, float] = field(default_factory=dict)
    support: dict[str, list[str]] = field(default_factory=dict)
    steps: dict[str, str] = field(default_factory=dict)
    shown: set[str] = field(default_factory=set)  # a line of the text points at it (not only a frame or context)
    explained: set[str] = field(default_factory=set)  # the causes that can explain a failure the job stopped on
    blocking: bool = False

    def add(self, cause: str, points: float, line: str, step: str, shown: bool = True) -> None:
        self.scores[cause] = self.scores.get(cause, 0.0) + points
        self.support.setdefault(cause, []).append(line)
        self.steps.setdefault(cause, step)
        if shown:
            self.shown.add(cause)


def rank(diag: Diagnosis, rs: RunbookSet, paste: Paste) -> Diagnosis:
    """Reorder `diag` into the ranked differential (in place; returned for chaining)."""
    from allreduce_doctor.runbook.causes import CAUSES as causes

    decided = diag.root_cause["id"] if diag.root_cause else None
    errors = _signals(diag, paste)
    words = (paste.job or {}).get("report")  # the reporter's own words (evidence/report_words.py)
    said = symptom.derive(paste.told, paste.bandwidth, set(errors), words)
    tally = Tally()
    _score_signatures(tally, errors, _one_host(paste), causes)
    _score_gaps(tally, diag, rs, paste, said, causes)
    worded = _worded(words, said, paste, causes)
    against = _against(diag, rs, paste, errors)
    if not tally.scores and not decided and not worded:  # nothing decides: the context's usual suspects, low
        fit = [s for s in usual_suspects(paste, said) if s[0] in causes and not causes[s[0]].healthy
               and not against.get(s[0]) and not (_one_host(paste) and _between(causes, s[0]))]
        for i, (cause, line, step) in enumerate(fit):  # a suspect a line of the text speaks against is no suspect
            # each below the one before by more than the symptom's x1.5 (_weigh): the table's order stands
            tally.add(cause, SUSPECT_DECAY ** i, line, step, shown=False)
    _weigh(tally, said, against, decided, causes)
    # Words only add: a line of the report backs a candidate or speaks against it, never reorders the lines'.
    for cause, lines in report_words.against(words).items():
        against.setdefault(cause, []).extend(lines)
    for cause, lines, _step in worded:
        if cause in tally.support:
            tally.support[cause].extend(f"{line} ({report_words.WORDS})" for line in lines[1:])
    ranked, tie = _candidates(diag, tally, decided, against, paste.job, causes)
    ranked = _place(diag, ranked, decided, worded, set(tally.scores), against, causes)
    diag.inconclusive += [{"node": "evidence", "reason": note} for note in report_words.notes(words)]
    if ranked:
        _conclude(diag, ranked[0], decided, tie, causes)
    else:
        _nothing(diag, errors)
    return diag


def usual_suspects(paste: Paste, said: str | None = None) -> list[tuple[str, str, str]]:
    """(cause, line, next step) of the context's usual suspects when no line of the text decides
    (runbooks/catalogue/usual_suspects.yaml, evidence/suspects.py): the line says the context, why and the
    basis; the next step is the cause's catalogue `paste`, the one that tells it from the next suspect."""
    from allreduce_doctor.runbook.causes import CAUSES as causes

    facts = paste.facts
    host = facts.get("log.host") if facts is not None else None
    tests = facts.get("log.tests") if facts is not None else None
    ctx = suspects.context(paste.nccl, paste.job, host.value if host is not None and host.ok else None,
                           tests.value if tests is not None and tests.ok else None, said)
    found = suspects.suspects_for(ctx)
    if not found:
        return []
    where = "; ".join(suspects.quotes(paste.job)) or "the text"
    return [(s.cause, f"{where}: usual suspect for {ctx.describe()} ({row.id}): {s.why} (basis: {', '.join(s.basis)})",
             causes[s.cause].paste) for row, s in found]


def _host(paste: Paste) -> dict | None:
    """log.host, when the walk read it."""
    host = paste.facts.get("log.host") if paste.facts is not None else None
    return host.value if host is not None and host.ok else None


def _one_host(paste: Paste) -> bool:
    return (paste.job or {}).get("scope") == "intra"


def _signals(diag: Diagnosis, paste: Paste) -> dict[str, dict]:
    """kind -> entry of what the text shows: NCCL's lines' kinds, and a dmesg block's lines the signature
    table names (host.py _signal) unless the walk judged them from the node's facts (its word stands)."""
    errors = dict((paste.nccl or {}).get("errors", {}))
    judged = {step.node for step in diag.path if step.outcome in ("yes", "no")}
    for kind, entry in ((paste.job or {}).get("kernel_signals") or {}).items():
        if KERNEL_CHECKS.get(kind) not in judged:
            errors.setdefault(kind, entry)
    return errors


def _score_signatures(tally: Tally, errors: dict[str, dict], one_host: bool, causes: dict) -> None:
    """Each kind adds to its candidates by their rank in candidates.yaml: twice for a kind the job fails on,
    twice for a kind with a single explanation (decisive), half for a generic one or a context."""
    killed = bool(CRASHES & set(errors))
    for kind, entry in errors.items():
        if killed and kind in HANG_FRAMES:
            continue  # the backtrace of a killed process: its frames say where it died, not that it waits
        cands = tuple(c for c in signatures.candidates().get(kind, ())
                      if not (one_host and (c.between_hosts or _between(causes, c.cause))))
        weak = kind in GENERIC or kind in CONTEXT
        weight = (2.0 if entry.get("blocking") else 1.0) * (0.5 if weak else 2.0 if len(cands) == 1 else 1.0)
        if entry.get("blocking") and not weak:
            tally.blocking = True
            tally.explained |= {c.cause for c in cands}
        for i, cand in enumerate(cands):
            if cand.cause not in causes or causes[cand.cause].healthy:
                continue
            tally.add(cand.cause, weight * RANK_WEIGHT[min(i, len(RANK_WEIGHT) - 1)],
                      f"{entry.get('source')}: {entry.get('first')}", cand.next_step, shown=kind not in CONTEXT)


def _score_gaps(tally: Tally, diag: Diagnosis, rs: RunbookSet, paste: Paste, said: str | None, causes: dict) -> None:
    """What the text leaves open: the walk's open questions and the situations gaps.py reads (the walk reached
    the question itself: 3 points); a hang on one host with nothing failing shows no cause's line (2, not shown)."""
    nccl, job, ports = paste.nccl, paste.job, paste.ports
    opened = (open_questions(diag, rs, job) + gaps.unrated_ports(ports) + gaps.down_ports(ports) + gaps.down_netdevs(job)
              + gaps.virtual_machine(job) + gaps.gdr_out_of_reach(job, said)
              + gaps.transport_unseen(nccl, job, said, CONTEXT) + gaps.acs_unplaced(*_host_and_lspci(paste))
              + tool_facts.shm_gap(_host(paste), (nccl or {}).get("errors") or {})
              + tool_facts.memlock_gap(paste.facts))
    for cause, line, step in opened:
        if cause in causes and not causes[cause].healthy:
            tally.add(cause, 3.0, line, step)
    for cause, line, step in gaps.hang_on_one_host(nccl, job, said, CONTEXT):
        tally.add(cause, 2.0, line, step, shown=False)


def _host_and_lspci(paste: Paste) -> tuple[dict | None, bool]:
    """log.host of the paste, and whether a whole lspci -vvv (the node's pci.lspci) was pasted."""
    facts = paste.facts
    host = facts.get("log.host") if facts is not None else None
    lspci = facts.get("pci.lspci") if facts is not None else None
    return (host.value if host is not None and host.ok else None), lspci is not None and lspci.ok


def _weigh(tally: Tally, said: str | None, against: dict[str, list[str]], decided: str | None, causes: dict) -> None:
    """The symptom favours the causes that show it (x1.5); a check of the text that led away from a cause
    lowers it (x0.6: often the text did not show it). What the runbooks decided comes first, unless the job
    failed on something it cannot explain (a leftover NCCL_P2P_DISABLE beside retry-exceeded completions):
    then it ranks as one more candidate after those that explain the failure."""
    scores = tally.scores
    for cause in scores:
        if said and said in causes[cause].shows:
            scores[cause] *= 1.5
    for cause in against:
        if cause in scores and cause != decided:
            scores[cause] *= 0.6
    if decided:
        top = max(scores.values(), default=0.0)
        scores[decided] = top + 1.0 if not tally.blocking or decided in tally.explained \
            else scores.get(decided, 0.0) + 3.0


def _against(diag: Diagnosis, rs: RunbookSet, paste: Paste, errors: dict[str, dict]) -> dict[str, list[str]]:
    """cause -> the lines that speak against it: the checks of the text that led away from it, less those
    that judged nothing, and what NCCL's own lines rule out (a loaded plugin, an init across hosts)."""
    nccl, job = paste.nccl or {}, paste.job or {}
    # A frame or a timeout says where a rank waits: no check of NCCL's lines reads it against a cause.
    context_lines = {str(e.get("source")) for k, e in errors.items() if k in CONTEXT}
    against = contradicted(diag, rs, job, context_lines)
    unshown(diag, job)
    # The log's GDR and socket steps say no when no line shows what NCCL chose: nothing to judge.
    if (job.get("gdr") or {}).get("state") == "unknown":
        against.pop("gdr_disabled", None)
    if not nccl.get("network") and not nccl.get("transports"):
        against.pop("socket_fallback", None)
    # NCCL prints its plugin search at INFO only (net.cc, plugin/net.cc `NET/Plugin ...`): with no such
    # line and no plugin failure, the plugin step's no judged nothing.
    if nccl.get("plugin") is None and not {"plugin_failed", "net_not_found"} & set(errors):
        against.pop("net_plugin_not_loaded", None)
    if running := errors.get("ofi_plugin_running"):  # only a loaded aws-ofi-nccl prints its INFO lines
        against.setdefault("net_plugin_not_loaded", []).append(f"{running.get('source')}: {running.get('first')}: "
                                                               "the OFI plugin's own line, so it loaded")
    done = bootstrapped(paste.nccl)
    for cause in BOOTSTRAPPED if done else ():
        against.setdefault(cause, []).append(done)
    return against


def _worded(words: dict | None, said: str | None, paste: Paste, causes: dict) -> list[tuple[str, list[str], str]]:
    """The report's words' candidates that can apply: not a cause between hosts for a job on one host, and
    not one an init across hosts rules out (words against the log's own init: the log wins)."""
    done = bootstrapped(paste.nccl)
    return [(cause, lines, step) for cause, lines, step in
            report_words.candidates(words, said, bool((paste.nccl or {}).get("lines")))
            if cause in causes and not causes[cause].healthy and not (_one_host(paste) and causes[cause].between_hosts)
            and not (done and cause in BOOTSTRAPPED)]


def _candidates(diag: Diagnosis, tally: Tally, decided: str | None, against: dict[str, list[str]],
                job: dict | None, causes: dict) -> tuple[list[Finding], list[str]]:
    """The first MAX_CANDIDATES causes by score as findings (the decided one high; the best of the others
    medium when a line points at it and it stands clear), and the causes tied at the head."""
    scores = tally.scores
    order = sorted(scores, key=lambda c: -scores[c])  # stable: ties go to the kind seen first
    tie = _head_tie(order, scores, decided, tally.shown)
    ranked: list[Finding] = []
    for cause in order[:MAX_CANDIDATES]:
        if cause == decided:
            first = next(f for f in diag.findings if f.cause == decided)
            first.confidence = "high"
            first.supporting = step_sources(diag, first.node, field_sources(job)) + tally.support.get(decided, [])[:3]
            first.next_step = tally.steps.get(decided) or _verify(causes, decided)
            ranked.append(first)
            continue
        info = causes[cause]
        # Where a rank waits (a frame, the watchdog's timeout) says nothing of why: alone it is low.
        medium = (scores[cause] >= 4 and scores[cause] >= 0.6 * scores[order[0]] and not ranked
                  and cause in tally.shown and cause not in tie)
        ranked.append(Finding(cause, info.title, info.severity, info.owner, "evidence.signatures", None,
                              confidence="medium" if medium else "low", supporting=tally.support.get(cause, [])[:3],
                              next_step=tally.steps.get(cause, "")))
    apart = _tell_apart(tie, tally.steps)
    for finding in ranked:
        finding.contradicting = against.get(finding.cause, [])[:3]
        if finding.cause in tie:
            finding.next_step = apart
    return ranked, tie


def _place(diag: Diagnosis, ranked: list[Finding], decided: str | None, worded: list[tuple[str, list[str], str]],
           scored: set[str], against: dict[str, list[str]], causes: dict) -> list[Finding]:
    """diag.findings: the candidates, then the sweep's findings the ranking did not take (they keep their
    place), then the words' candidates: after every finding read from a line, so the words never push one
    out of the first three. With none read from a line, the words' candidates are the differential (returned)."""
    rest = [f for f in diag.findings if f.cause not in {r.cause for r in ranked}]
    for finding in rest:
        if finding.cause == decided:  # decided, but not what the job failed on: still a fact
            finding.confidence, finding.next_step = "high", _verify(causes, decided)
    by_words = [Finding(cause, causes[cause].title, causes[cause].severity, causes[cause].owner, WORDS_NODE, None,
                        confidence="low", supporting=lines[:3], next_step=step, contradicting=against.get(cause, [])[:3])
                for cause, lines, step in worded if cause not in scored][:MAX_CANDIDATES - len(ranked)]
    if ranked or rest:
        diag.findings = ranked + rest + [f for f in by_words if f.cause not in {r.cause for r in rest}]
        return ranked
    diag.findings = by_words
    return by_words


def _nothing(diag: Diagnosis, errors: dict[str, dict]) -> None:
    """No candidate. A measured result at the hardware's limit is a finding; "every check passed" is not one
    from text that shows no node: inconclusive, with what the text's failures say and what to collect."""
    if diag.healthy and diag.healthy.get("id") != "no_fault_found":
        return
    diag.verdict, diag.root_cause, diag.healthy = INCONCLUSIVE, None, None
    for kind, entry in errors.items():
        if entry.get("blocking") and kind in signatures.by_kind():
            diag.inconclusive.append({"node": "evidence", "reason": (
                f"{entry.get('source')}: {signatures.by_kind()[kind].says}; no cause of the catalogue covers it")})
    diag.inconclusive.append({"node": "evidence", "reason": COLLECT})


def _conclude(diag: Diagnosis, head: Finding, decided: str | None, tie: list[str], causes: dict) -> None:
    """The root cause is the first candidate; one the text points at without deciding makes the verdict
    inconclusive, with the step that would decide it."""
    if head.cause == decided:
        diag.root_cause = dict(diag.root_cause or {}, confidence="high")
    else:
        info = causes[head.cause]
        diag.root_cause = {"id": head.cause, "title": info.title, "severity": info.severity, "owner": info.owner,
                           "summary": info.summary, "node": head.node, "confidence": head.confidence}
    _fix_follows(diag, head.cause, causes)
    if head.confidence == "high":
        return
    diag.verdict = INCONCLUSIVE
    diag.healthy = None
    reason = (f"the report's words suggest {head.cause} but do not decide it: {head.next_step}"
              if head.node == WORDS_NODE else
              f"the text suggests {' or '.join(tie)} and does not tell them apart: {head.next_step}" if tie else
              f"the text suggests {head.cause} but does not decide it: {head.next_step}")
    diag.inconclusive.append({"node": "evidence", "reason": reason})


def _fix_follows(diag: Diagnosis, head: str, causes: dict) -> None:
    """The Fix and its check are the headline's: when the walk found a fix (a cause it decided), the first
    candidate's own steps come first, then those of every other candidate the walk decided, in rank order.
    With nothing decided there is no fix to print, for the headline or any other."""
    walked = [r["step"] for r in diag.remediation]
    if not walked:
        return
    steps: list[dict] = []
    checks: list[str] = []
    for cause in dict.fromkeys([head, *(f.cause for f in diag.findings)]):
        info = causes.get(cause)
        if info is None or (cause != head and not any(step in walked for step in info.remediation)):
            continue
        steps += [{"step": step, "owner": info.owner} for step in info.remediation if all(r["step"] != step for r in steps)]
        checks += [v for v in info.verification if v not in checks]
    diag.remediation = steps + [r for r in diag.remediation if all(r["step"] != x["step"] for x in steps)]
    diag.verification = checks + [v for v in diag.verification if v not in checks]


def _head_tie(order: list[str], scores: dict[str, float], decided: str | None, shown: set[str]) -> list[str]:
    """The first candidates that share the best score, when a line of the text points at one of them: the text
    does not tell them apart (a gap's pair, an open question's yes and no leaves, two kinds' equal sums), so
    none is more likely than the other. The runbooks' decision has no twin; candidates no line points at
    (a hang on one host with nothing failing) are low from the start and keep the paste that would show each."""
    if not order or order[0] == decided:
        return []
    tied = [c for c in order[:MAX_CANDIDATES] if abs(scores[c] - scores[order[0]]) < 1e-9 and c != decided]
    return tied if len(tied) > 1 and shown & set(tied) else []


def _tell_apart(tie: list[str], steps: dict[str, str]) -> str:
    """The one step for tied candidates: the step they share (a gap's pair gives the paste that separates
    them), else each one's paste, named by the cause it would show."""
    own = list(dict.fromkeys(steps.get(cause, "") for cause in tie))
    return own[0] if len(own) == 1 else "; ".join(f"{steps.get(cause, '')} ({cause})" for cause in tie)


def _between(causes: dict, cause: str) -> bool:
    info = causes.get(cause)
    return info is not None and info.between_hosts


def _verify(causes: dict, cause: str) -> str:
    checks = causes[cause].verification
    return f"confirm the fix: {checks[0]}" if checks else ""
