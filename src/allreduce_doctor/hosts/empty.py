"""EmptyHost: no node at all. Used when only pasted evidence is diagnosed (on a laptop, from a
ticket): every file and command is missing, so only the evidence decides and nothing is read."""

from __future__ import annotations

from allreduce_doctor.hosts.base import FILE_MISSING, CommandResult, FileResult, HostIdentity, ProcessInfo

REASON = "no node was read (diagnosing pasted evidence only)"


class EmptyHost:
    kind = "evidence"

    def identity(self) -> HostIdentity:
        return HostIdentity(hostname="", kernel="")

    def read(self, path: str) -> FileResult:
        return FileResult(path, FILE_MISSING, reason=REASON)

    def glob(self, pattern: str) -> list[str]:
        return []

    def readlink(self, path: str) -> str | None:
        return None

    def which(self, name: str) -> str | None:
        return None

    def run(self, argv: list[str], timeout: float, key: str = "") -> CommandResult:
        return CommandResult(list(argv), None, error=REASON)

    def processes(self) -> list[ProcessInfo]:
        return []

    @property
    def sample(self) -> int:
        return 0

    def sample_time(self) -> float:
        return 0.0

    def next_sample(self, interval: float) -> None:
        return None
