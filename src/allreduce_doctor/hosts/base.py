"""The Host: the only door to a node.

Probes ask a Host for files, globs, links, commands and processes. LiveHost answers from the
real system; SnapshotHost from a captured bundle; RecordingHost wraps a live host and writes
every answer (failures too) into a bundle, so replay is exact.

Counters are sampled more than once: `next_sample(interval)` waits (live) or steps to the
next recorded sample (snapshot). Every answer belongs to the current sample index.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

# The records a Host answers with live in records.py (shared with snapshot/); re-exported here.
from allreduce_doctor.records import (  # noqa: F401
    FILE_DENIED,
    FILE_ERROR,
    FILE_MISSING,
    FILE_OK,
    MAX_FILE_BYTES,
    CommandResult,
    FileResult,
    GlobNotRecorded,
    HostIdentity,
    ProcessInfo,
)


@runtime_checkable
class Host(Protocol):
    """What every host answers. Paths are absolute; globs return sorted lists."""

    kind: str  # "live", "snapshot", "recording"

    def identity(self) -> HostIdentity: ...

    def read(self, path: str) -> FileResult: ...

    def glob(self, pattern: str) -> list[str]: ...

    def readlink(self, path: str) -> str | None:
        """The resolved absolute target of a symlink (realpath), or None."""
        ...

    def which(self, name: str) -> str | None: ...

    def elf_exports(self, path: str, prefix: str) -> list[str] | None:
        """The defined dynamic symbols of the ELF library at path that start with prefix (what
        dlsym can find); None when unreadable or not recorded: unknown, never "exports none"."""
        ...

    def run(self, argv: list[str], timeout: float, key: str) -> CommandResult:
        """Run argv (no shell) with a timeout; `key` names it in a bundle (probe/instance)."""
        ...

    def processes(self) -> list[ProcessInfo]: ...

    @property
    def sample(self) -> int:
        """Index of the current counter sample (0, 1, ...)."""
        ...

    def sample_time(self) -> float:
        """Monotonic seconds at the start of the current sample."""
        ...

    def next_sample(self, interval: float) -> None:
        """Wait `interval` seconds (live) or step to the next recorded sample (snapshot)."""
        ...
