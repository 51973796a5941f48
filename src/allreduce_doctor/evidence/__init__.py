"""Evidence import: pasted text (NCCL_DEBUG logs, nccl-tests output, RDMA and host tool output,
environment and launcher lines) turned into Observations, so the same runbooks decide.

    result = load_evidence(["ticket.txt", "-"])   # '-' reads stdin
    result.observations  # Observation per fact (log.nccl, log.env, ... and node facts such as tools.ibstat)
    result.report        # JSON-safe: what was recognized where, and what could not be placed

A file is read as a stream (memory stays flat whatever its size). Any line with a signal counts
(signatures/signatures.yaml), wherever it stands: a lone line, prose, a mail quote, a comment; so do
the words of a report that describes NCCL trouble (evidence/report_words.py). A file with neither is
an error (EvidenceError, a DoctorError, exit 2) that says what to paste.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from allreduce_doctor.evidence.reader import EvidenceError
from allreduce_doctor.observations import Observation

# A report's own words count (evidence/report_words.py): a text is refused only when it has no line that
# NCCL or a tool printed and does not describe NCCL trouble either.
NOTHING = ("this text shows no NCCL output line and describes no NCCL trouble; paste the NCCL_DEBUG=INFO "
           "NCCL_DEBUG_SUBSYS=INIT,NET output of one failing rank, `ibstat`, `show_gids` or the all_reduce_perf table")
EMPTY = "the file is empty; paste NCCL_DEBUG=INFO output or tool output"


@dataclass
class EvidenceResult:
    observations: list[Observation] = field(default_factory=list)
    report: dict = field(default_factory=dict)
    # A paste naming several hosts (evidence/hosts.py): {host: that host's part}, in paste order;
    # empty for one host. observations/report above are then the whole paste's, as for one host.
    hosts: dict[str, EvidenceResult] = field(default_factory=dict)


def load_evidence(paths: list[str], symptom: str | None = None) -> EvidenceResult:
    """Observations and the report for the given files ('-' is stdin, at most once). `symptom`: what the user
    said went wrong (--symptom): a text that names NCCL is then a report of NCCL trouble, never refused."""
    from allreduce_doctor.evidence.facts import build
    from allreduce_doctor.evidence.hosts import read_by_host
    from allreduce_doctor.evidence.segmenter import Scanner

    if list(paths).count("-") > 1:
        raise EvidenceError("--evidence -: stdin can be read only once")
    scanner = Scanner(symptom=symptom)
    for path in paths:
        scanned = scanner.scan(path)
        if scanned.recognized == 0:
            message = EMPTY if scanned.bytes == 0 else NOTHING
            raise EvidenceError(f"{scanned.name}: {message}")
    observations, report = build(scanner)
    result = EvidenceResult(observations, report)
    parts, left_out = read_by_host(list(paths), scanner)
    for host, part in parts.items():
        part_observations, part_report = build(part)
        result.hosts[host] = EvidenceResult(part_observations, part_report)
    if left_out:
        report["hosts_left_out"] = left_out[:32]
    return result


__all__ = ["EvidenceError", "EvidenceResult", "load_evidence"]
