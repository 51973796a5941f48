"""What a Host answers, as plain records: files, commands, processes and the host's identity.

hosts/ produces them and snapshot/ stores and checks them; both import them from here, so the
bundle format does not depend on the hosts that read and write it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from allreduce_doctor.plaindata import as_plain

# FileResult.status values
FILE_OK = "ok"
FILE_MISSING = "missing"  # no such file
FILE_DENIED = "denied"  # permission denied (non-root)
FILE_ERROR = "error"  # any other read failure (EINVAL on empty GID slots, EIO on PMA, ...)

MAX_FILE_BYTES = 1 << 20  # sysfs files are tiny; /proc/cmdline too. Anything bigger is refused.


class GlobNotRecorded(LookupError):
    """A glob a bundle never recorded: what it would list is unknown (str(err) says why). An
    empty list would say the hardware is absent, that is healthy; probes/execute.py makes the
    probe that asked unknown instead."""


@dataclass
class FileResult:
    path: str
    status: str
    text: str | None = None
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status == FILE_OK

    def to_dict(self) -> dict:
        return as_plain(self)


@dataclass
class CommandResult:
    argv: list[str]
    rc: int | None  # None when it never ran or was killed
    stdout: str = ""
    stderr: str = ""
    duration: float = 0.0
    timed_out: bool = False
    error: str = ""  # "not found", "permission denied", ... when it could not start

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out and not self.error

    def to_dict(self) -> dict:
        return as_plain(self)

    @classmethod
    def from_dict(cls, data: dict) -> CommandResult:
        return cls(
            argv=[str(a) for a in data.get("argv", [])],
            rc=data.get("rc"),
            stdout=str(data.get("stdout", "")),
            stderr=str(data.get("stderr", "")),
            duration=float(data.get("duration", 0.0)),
            timed_out=bool(data.get("timed_out", False)),
            error=str(data.get("error", "")),
        )


@dataclass
class ProcessInfo:
    """A process as the probes see it: environment already filtered and redacted."""

    pid: int
    name: str
    cmdline: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    maps_nccl: bool = False  # libnccl mapped into the process
    env_readable: bool = True
    nccl_lib: str = ""  # the libnccl file mapped (its name carries the version: libnccl.so.2.21.5)
    rdma_libs: list[str] = field(default_factory=list)  # libibverbs and verbs providers mapped (/proc/PID/maps)
    uid: int | None = None  # real uid: NCCL reads ~/.nccl.conf of getpwuid(getuid()) (src/misc/param.cc)
    maps_cut: str = ""  # why /proc/PID/maps was not scanned whole (its size cap, the output budget)
    # NCCL net plugins (libnccl-net*.so) and libfabric mapped; None: not scanned (a bundle from before)
    net_libs: list[str] | None = None

    def to_dict(self) -> dict:
        return as_plain(self)


@dataclass
class HostIdentity:
    hostname: str = ""
    kernel: str = ""
    euid: int | None = None
    is_root: bool = False

    def to_dict(self) -> dict:
        return as_plain(self)
