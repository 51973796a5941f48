"""Evidence import: pasted text (NCCL_DEBUG logs, nccl-tests output, RDMA and host tool output,
environment and launcher lines) turned into Observations, so the same runbooks decide.

    result = load_evidence(["ticket.txt", "-"])   # '-' reads stdin
    result.observations  # Observation per fact (log.nccl, log.env, ... and node facts such as tools.ibstat)
    result.report        # JSON-safe: what was recognized where, and what could not be placed

A file is read as a stream (memory stays flat whatever its size). A file in which nothing is
recognized is an error (EvidenceError, a DoctorError): the user gave the wrong file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from allreduce_doctor.evidence.reader import EvidenceError
from allreduce_doctor.observations import Observation

NOTHING = ("nothing recognized as NCCL logs, nccl-tests output or RDMA tool output; "
           "paste NCCL_DEBUG=INFO output or tool output")
EMPTY = "the file is empty; paste NCCL_DEBUG=INFO output or tool output"


@dataclass
class EvidenceResult:
    observations: list[Observation] = field(default_factory=list)
    report: dict = field(default_factory=dict)


def load_evidence(paths: list[str]) -> EvidenceResult:
    """Observations and the report for the given files ('-' is stdin, at most once)."""
    from allreduce_doctor.evidence.facts import build
    from allreduce_doctor.evidence.segmenter import Scanner

    if list(paths).count("-") > 1:
        raise EvidenceError("--evidence -: stdin can be read only once")
    scanner = Scanner()
    for path in paths:
        report = scanner.scan(path)
        if report.recognized == 0:
            message = EMPTY if report.bytes == 0 else NOTHING
            raise EvidenceError(f"{report.name}: {message}")
    observations, report = build(scanner)
    return EvidenceResult(observations, report)


__all__ = ["EvidenceError", "EvidenceResult", "load_evidence"]
