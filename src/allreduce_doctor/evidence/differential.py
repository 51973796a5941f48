"""The ranked differential of an evidence-only run: up to three candidate causes, best first.

Pasted text is rarely decisive: a retry-exceeded completion has four or five possible causes.
From what the walk decided and what the text's signatures say happened, this ranks the likely
causes, each with a confidence, the lines that support it and those that speak against it, and
the one paste or command that tells it from the others. `root_cause` is the first candidate;
`findings` is the ordered list. A paste is never "healthy": with no candidate the Diagnosis says
that nothing in the text points at a cause, and what to collect.

Scoring: each signature kind found adds to its candidate causes by their rank in
signatures/candidates.yaml (the prior), twice for a kind the job fails on, half for a generic
kind (ncclSystemError, a remote rank leaving: consequences of something else). A cause the
runbooks decided from the text comes first. The reporter's symptom (hang, slow, crash, error)
favours the causes that give it; a pasted stack of a rank waiting in NCCL (signatures.yaml
hang_in_*: where it waits, init, a TCP socket, a connection, a collective) or PyTorch's watchdog
timeout is the symptom hang when none was given, and its kinds weigh like consequences (a frame
says where, not why). What the text leaves open also counts: a topology whose GPUs reach no NIC
within NCCL's GPUDirect RDMA distance, or a slow job whose log never names its network.
"""

from __future__ import annotations

import re

from allreduce_doctor.evidence import gaps, report_words, signatures
from allreduce_doctor.runbook.diagnosis import Diagnosis, Finding
from allreduce_doctor.runbook.model import CauseLeaf, Check, RunbookSet
from allreduce_doctor.status import INCONCLUSIVE, STEP_NA, STEP_PASS

MAX_CANDIDATES = 3
WORDS_NODE = "evidence.report_words"  # a candidate read from the report's words only
_LINE_RE = re.compile(r"\S:\d+(?:-\d+)?(?:,|$)")  # FILE:LINE or FILE:A-B
RANK_WEIGHT = (3.0, 2.0, 1.0, 1.0)
# Kinds that follow from another failure rather than name one (NCCL's result strings, flushes).
GENERIC = {"remote_error", "system_error", "internal_error", "cuda_failure", "completion_flush", "completion_error",
           "ofi_error", "out_of_memory", "invalid_usage", "bootstrap_failed",  # bootstrap_failed: NCCLCHECK's trace
           "c10d_store_closed"}  # the store's server (rank 0) left first
# Stack frames of a rank hung in NCCL: the phase it waits in (signatures.yaml); PyTorch's watchdog
# timeout says the same from above NCCL (a collective that never completed).
CRASHES = {"bus_error"}  # a signal that killed the process: the frames printed with it are where it died
HANG_FRAMES = {"hang_in_init", "hang_in_socket", "hang_in_connect", "hang_in_collective", "collective_timeout"}
# What the process runs under, not a failure: weighs like a consequence (a lone HAMi-core line or an
# Istio sidecar is a low candidate; beside a rank hung in init the runbook decides it; a named OFI
# plugin says the job needs it, not that it failed).
CONTEXT = HANG_FRAMES | {"cuda_interposer", "mesh_sidecar", "ofi_plugin_named"}
# Causes whose usual face is low bandwidth rather than a failure (catalogue summaries).
SLOW = {"socket_fallback", "ib_disabled_by_env", "gdr_disabled", "pcie_acs_enabled", "pcie_link_degraded",
        "numa_affinity", "vm_topology_hidden", "p2p_disabled_by_env", "nvlink_degraded", "nccl_tuning_override",
        "too_few_channels", "link_degraded", "link_errors", "ib_congestion", "ib_xmit_discards", "pfc_not_enabled",
        "traffic_class_mismatch", "ecn_disabled", "roce_packet_loss", "pfc_pause_storm", "roce_congestion",
        "straggler_node", "container_missing_libibverbs", "container_missing_ib_devices", "wrong_ib_hca"}
# Causes that show as a hang more than as an error (peer traffic that never completes).
HANG = {"pcie_acs_enabled", "iommu_enabled", "gid_index_drift", "asymmetric_transport", "wrong_socket_ifname",
        "container_network_isolation", "fabric_unreachable", "socket_blocked", "gpu_sharing_interposer_deadlock",
        "nccl_version_mismatch"}
# Causes that only matter between hosts, so none explains what a job the text shows on one host hit
# (the runbook's bridge, socket_iface, blocked, libibverbs and socket checks are gated the same way):
# TCP between hosts: every local address (loopback, a bridge, the container's own) reaches every other,
# and NCCL's bootstrap and proxy sockets listen on the chosen interface for the ranks (bootstrap.cc);
# the network transport: ranks of one host connect over P2P or SHM, NET only when both cannot
# (transport.cc tries p2p, shm, net in that order), so no verbs library or a TCP fallback costs nothing.
BETWEEN_HOSTS = {"wrong_socket_ifname", "container_network_isolation", "socket_blocked",
                 "container_missing_libibverbs", "socket_fallback"}
# What a bootstrap over TCP that reached every rank across hosts rules out (init.cc prints Init COMPLETE after
# initTransportsRank's bootstrapAllGather of every rank's peer info, v2.4.8-1 to v2.30.7-1; bootstrap.cc connects
# each rank to the next over NCCL's socket interface): an interface the peers cannot reach, a firewall on
# NCCL's ports, a container network that isolates the hosts.
BOOTSTRAPPED = ("wrong_socket_ifname", "socket_blocked", "container_network_isolation")
# Kernel lines the trunk judges when the paste shows the node's GPUs and PCI tree (runbooks/trunk.yaml:
# an AER only on a device NCCL's traffic crosses, a peermem error only beside NVIDIA GPUs).
KERNEL_CHECKS = {"pcie_aer_uncorrected": "trunk.pcie_aer", "peermem_error": "trunk.peermem_errors"}
COLLECT = ("nothing in this text points at a cause; paste the NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET output "
           "of one failing rank, `ibstat`, `show_gids` and the all_reduce_perf table")


UNSHOWN = "not judged: the text shows no line this check reads"


def rank(diag: Diagnosis, rs: RunbookSet, nccl: dict | None, symptom: str | None = None,
         ports: list | None = None, job: dict | None = None) -> Diagnosis:
    """Reorder `diag` into the ranked differential (in place; returned for chaining). `job` is
    log.job (its scope: a job the text shows on one host drops the causes that need two)."""
    from allreduce_doctor.runbook.causes import CAUSES as causes

    scores: dict[str, float] = {}
    support: dict[str, list[str]] = {}
    steps: dict[str, str] = {}
    decided = diag.root_cause["id"] if diag.root_cause else None
    explained: set[str] = set()  # the causes that can explain a failure the job stopped on
    shown: set[str] = set()  # the causes a line of the text points at (not only a frame, a timeout or a context)
    blocking = False
    errors = dict((nccl or {}).get("errors", {}))
    judged = {step.node for step in diag.path if step.outcome in ("yes", "no")}
    for kind, entry in ((job or {}).get("kernel_signals") or {}).items():
        if KERNEL_CHECKS.get(kind) not in judged:  # the walk judged it from the node's facts: its word stands
            errors.setdefault(kind, entry)  # a dmesg block's lines the signature table names (host.py _signal)
    killed = bool(CRASHES & set(errors))
    if symptom is None and HANG_FRAMES & set(errors) and not killed:
        symptom = "hang"  # a stack of a rank waiting in NCCL is what a hang looks like (not a crash's backtrace)
    words = (job or {}).get("report")  # the reporter's own words (evidence/report_words.py)
    if symptom is None and words:
        symptom = words.get("symptom")  # what they saw, when no --symptom said it
    one_host = (job or {}).get("scope") == "intra"
    for kind, entry in errors.items():
        if killed and kind in HANG_FRAMES:
            continue  # the backtrace of a killed process: its frames say where it died, not that it waits
        cands = tuple(c for c in signatures.candidates().get(kind, ()) if not (one_host and c.cause in BETWEEN_HOSTS))
        # A kind with a single explanation is decisive; a generic one follows from another failure.
        weak = kind in GENERIC or kind in CONTEXT
        weight = (2.0 if entry.get("blocking") else 1.0) * (0.5 if weak else 2.0 if len(cands) == 1 else 1.0)
        if entry.get("blocking") and not weak:
            blocking = True
            explained |= {c.cause for c in cands}
        for i, cand in enumerate(cands):
            if cand.cause not in causes or causes[cand.cause].healthy:
                continue
            if kind not in CONTEXT:
                shown.add(cand.cause)
            scores[cand.cause] = scores.get(cand.cause, 0.0) + weight * RANK_WEIGHT[min(i, len(RANK_WEIGHT) - 1)]
            support.setdefault(cand.cause, []).append(f"{entry.get('source')}: {entry.get('first')}")
            steps.setdefault(cand.cause, cand.next_step)
    for cause, line, step in (_open_questions(diag, rs) + gaps.unrated_ports(ports) + gaps.down_ports(ports)
                              + gaps.down_netdevs(job) + gaps.virtual_machine(job) + gaps.gdr_out_of_reach(job, symptom)
                              + gaps.transport_unseen(nccl, job, symptom, CONTEXT)):
        if cause in causes and not causes[cause].healthy:
            scores[cause] = scores.get(cause, 0.0) + 3.0  # the walk reached the question itself
            shown.add(cause)
            support.setdefault(cause, []).append(line)
            steps.setdefault(cause, step)
    # A hang with nothing failing shows no cause's line: its candidates stay low (no `shown`).
    for cause, line, step in gaps.hang_on_one_host(nccl, job, symptom, CONTEXT):
        scores[cause] = scores.get(cause, 0.0) + 2.0
        support.setdefault(cause, []).append(line)
        steps.setdefault(cause, step)
    favoured = SLOW if symptom == "slow" else HANG if symptom == "hang" else set()
    for cause in scores:
        if cause in favoured:
            scores[cause] *= 1.5
    # A frame or a timeout says where a rank waits: no check of NCCL's lines reads it against a cause.
    context_lines = {str(e.get("source")) for k, e in errors.items() if k in CONTEXT}
    against = _contradicted(diag, rs, job or {}, context_lines)
    _unshown(diag, job or {})
    # The log's GDR and socket steps say no when no line shows what NCCL chose: nothing to judge.
    if ((job or {}).get("gdr") or {}).get("state") == "unknown":
        against.pop("gdr_disabled", None)
    if not (nccl or {}).get("network") and not (nccl or {}).get("transports"):
        against.pop("socket_fallback", None)
    # NCCL prints its plugin search at INFO only (net.cc, plugin/net.cc `NET/Plugin ...`): with no such
    # line and no plugin failure, the plugin step's no judged nothing.
    if (nccl or {}).get("plugin") is None and not {"plugin_failed", "net_not_found"} & set(errors):
        against.pop("net_plugin_not_loaded", None)
    if running := errors.get("ofi_plugin_running"):  # only a loaded aws-ofi-nccl prints its INFO lines
        against.setdefault("net_plugin_not_loaded", []).append(f"{running.get('source')}: {running.get('first')}: "
                                                               "the OFI plugin's own line, so it loaded")
    done = _bootstrapped(nccl)
    for cause in BOOTSTRAPPED if done else ():
        against.setdefault(cause, []).append(done)
    for cause in against:
        if cause in scores and cause != decided:
            scores[cause] *= 0.6  # a check of the text led away from it (often: the text did not show it)
    # Words only add: a line of the report backs a candidate or speaks against it, never reorders the lines'.
    for cause, lines in report_words.against(words).items():
        against.setdefault(cause, []).extend(lines)
    worded = [(cause, lines, step) for cause, lines, step in
              report_words.candidates(words, symptom, bool((nccl or {}).get("lines")))
              if cause in causes and not causes[cause].healthy and not (one_host and cause in BETWEEN_HOSTS)
              and not (done and cause in BOOTSTRAPPED)]  # words against the log's own init: the log wins
    for cause, lines, _step in worded:
        if cause in support:
            support[cause].extend(f"{line} ({report_words.WORDS})" for line in lines[1:])
    if decided:
        # What the runbooks decided comes first, unless the job failed on something it cannot
        # explain (a leftover NCCL_P2P_DISABLE beside retry-exceeded completions): then it ranks
        # as one more candidate after those that explain the failure.
        top = max(scores.values(), default=0.0)
        scores[decided] = top + 1.0 if not blocking or decided in explained else scores.get(decided, 0.0) + 3.0
    order = sorted(scores, key=lambda c: -scores[c])  # stable: ties go to the kind seen first
    tie = _head_tie(order, scores, decided, shown)
    ranked: list[Finding] = []
    for cause in order:
        if len(ranked) >= MAX_CANDIDATES:
            break
        if cause == decided:
            first = next(f for f in diag.findings if f.cause == decided)
            first.confidence = "high"
            first.supporting = _step_sources(diag, first.node, _own(job)) + support.get(decided, [])[:3]
            first.next_step = steps.get(decided) or _verify(causes, decided)
            ranked.append(first)
            continue
        info = causes[cause]
        best = scores[order[0]]
        # Where a rank waits (a frame, the watchdog's timeout) says nothing of why: alone it is low.
        confidence = ("medium" if scores[cause] >= 4 and scores[cause] >= 0.6 * best and not ranked and cause in shown
                      and cause not in tie else "low")
        ranked.append(Finding(cause, info.title, info.severity, info.owner, "evidence.signatures", None,
                              confidence=confidence, supporting=support.get(cause, [])[:3],
                              next_step=steps.get(cause, "")))
    apart = _tell_apart(tie, steps)
    for finding in ranked:
        finding.contradicting = against.get(finding.cause, [])[:3]
        if finding.cause in tie:
            finding.next_step = apart
    # Findings the sweep made that the ranking did not take keep their place after the candidates.
    rest = [f for f in diag.findings if f.cause not in {r.cause for r in ranked}]
    for finding in rest:
        if finding.cause == decided:  # decided, but not what the job failed on: still a fact
            finding.confidence, finding.next_step = "high", _verify(causes, decided)
    by_words = [Finding(cause, causes[cause].title, causes[cause].severity, causes[cause].owner, WORDS_NODE, None,
                        confidence="low", supporting=lines[:3], next_step=step, contradicting=against.get(cause, [])[:3])
                for cause, lines, step in worded if cause not in scores][:MAX_CANDIDATES - len(ranked)]
    if ranked or rest:  # after every finding read from a line: the words never push one out of the first three
        diag.findings = ranked + rest + [f for f in by_words if f.cause not in {r.cause for r in rest}]
    else:  # the words alone: their candidates are the differential
        ranked = diag.findings = by_words
    diag.inconclusive += [{"node": "evidence", "reason": note} for note in report_words.notes(words)]
    if not ranked:
        # A measured result at the hardware's limit is a finding; "every check passed" is not one
        # from text that shows no node.
        if not diag.healthy or diag.healthy.get("id") == "no_fault_found":
            diag.verdict, diag.root_cause, diag.healthy = INCONCLUSIVE, None, None
            for kind, entry in errors.items():
                if entry.get("blocking") and kind in signatures.by_kind():
                    diag.inconclusive.append({"node": "evidence", "reason": (
                        f"{entry.get('source')}: {signatures.by_kind()[kind].says}; no cause of the catalogue covers it")})
            diag.inconclusive.append({"node": "evidence", "reason": COLLECT})
        return diag
    head = ranked[0]
    if head.cause == decided:
        diag.root_cause = dict(diag.root_cause, confidence="high")
    else:
        info = causes[head.cause]
        diag.root_cause = {"id": head.cause, "title": info.title, "severity": info.severity, "owner": info.owner,
                           "summary": info.summary, "node": head.node, "confidence": head.confidence}
    if head.confidence != "high":  # the text points at it without deciding it
        diag.verdict = INCONCLUSIVE
        diag.healthy = None
        reason = (f"the report's words suggest {head.cause} but do not decide it: {head.next_step}"
                  if head.node == WORDS_NODE else
                  f"the text suggests {' or '.join(tie)} and does not tell them apart: {head.next_step}" if tie else
                  f"the text suggests {head.cause} but does not decide it: {head.next_step}")
        diag.inconclusive.append({"node": "evidence", "reason": reason})
    return diag


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


def _contradicted(diag: Diagnosis, rs: RunbookSet, job: dict, context_lines: set[str]) -> dict[str, list[str]]:
    """cause -> the decided steps whose outcome led away from it (a check that said no to it), each with
    the lines its facts were read from: a log.host or log.job field cites the outputs it is computed from
    (host.py FIELD_TOOLS, job_summary.py FIELD_PARTS), not every line pasted, and none when the text shows none."""
    own = _own(job)
    out: dict[str, list[str]] = {}
    for step in diag.path:
        if step.kind != "check" or step.outcome not in ("yes", "no"):
            continue
        node = rs.node(step.node)
        other = "no" if step.outcome == "yes" else "yes"
        if other not in node.outcomes:
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
        lines = [s for s in sources if _LINE_RE.search(s)]
        if isinstance(leaf, CauseLeaf) and lines and not set(lines) <= context_lines:
            out.setdefault(leaf.cause, []).append(f"{', '.join(dict.fromkeys(lines))}: {step.title} -> {step.outcome}")
    return out


def _bootstrapped(nccl: dict | None) -> str:
    """The Init COMPLETE lines of ranks on two hosts of one communicator, where its bootstrap ran over TCP
    (not over the net plugin: 2.23+ `Bootstrap: Using mlx5_0:1`, which leaves the socket interface untried)."""
    done = (nccl or {}).get("init_across_hosts") or {}
    if len(done) < 2 or (nccl or {}).get("bootstrap_net"):
        return ""
    return f"{', '.join(done.values())}: ranks on {' and '.join(done)} completed init (Init COMPLETE): NCCL's " \
           "bootstrap reached every rank across the hosts over TCP"


def _unshown(diag: Diagnosis, job: dict) -> None:
    """A check of the log's runbook that passed with no line of the text behind any of its facts judged
    nothing (the text shows no NCCL line of that kind because it shows none at all): its badge is n.a.,
    not pass. Missing is never healthy (docs/design-rules.md); its outcome and the walk stay."""
    own = _own(job)
    for step in diag.path:
        if step.badge != STEP_PASS or not step.node.startswith("nccl_log.") or not step.facts:
            continue
        if not any(_LINE_RE.search(_own_source(f, own, fallback=True)) for f in step.facts):
            step.badge, step.means = STEP_NA, UNSHOWN


def _own(job: dict | None) -> dict[str, dict[str, str]]:
    return {"log.host": (job or {}).get("host_sources") or {}, "log.job": (job or {}).get("field_sources") or {}}


def _own_source(fact_row: dict, own: dict[str, dict[str, str]], fallback: bool = False) -> str:
    """The lines a step's fact was read from: a field of log.host / log.job by its own parts. A field without
    parts of its own has none (`fallback`: the observation's lines instead)."""
    observation, _, rest = fact_row["fact"].partition(".")[2].partition(".")
    table = own.get(f"log.{observation}") if fact_row["fact"].startswith("log.") else None
    field = rest.split(".")[0]
    if table is not None and (field in table or not fallback):
        return table.get(field, "")
    return str(fact_row.get("source") or "")


def _open_questions(diag: Diagnosis, rs: RunbookSet) -> list[tuple[str, str, str]]:
    """(cause, line, next step) for each check of the log's runbook that the text left open: the
    situation it tests is in the text, the fact that decides it is not (an unknown stays unknown,
    and its cause stays a candidate with what to collect)."""
    out = []
    reasons = {i["node"]: i["reason"] for i in diag.inconclusive}
    for at, step in enumerate(diag.path):
        if step.kind != "check" or step.outcome != "unknown" or not step.node.startswith("nccl_log."):
            continue
        node = rs.node(step.node)
        line = f"{_sources(step) or step.node}: {step.title} -> unknown"
        before = diag.path[at - 1] if at else None
        if not _LINE_RE.search(_sources(step)) and before is not None and _LINE_RE.search(_sources(before)):
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
    lines = [s for s in sources if _LINE_RE.search(s)]
    return ", ".join(lines or sources)


def _step_sources(diag: Diagnosis, node: str, own: dict[str, dict[str, str]]) -> list[str]:
    for step in diag.path:
        if step.node == node:
            return [f"{source}: {f['fact']}" for f in step.facts if (source := _own_source(f, own))][:3]
    return []


def _verify(causes: dict, cause: str) -> str:
    checks = causes[cause].verification
    return f"confirm the fix: {checks[0]}" if checks else ""
