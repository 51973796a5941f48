"""Named Python builtins: facts that only Python can observe (through the Host)."""

from __future__ import annotations

from typing import Callable

from allreduce_doctor.hosts.base import Host
from allreduce_doctor.observations import MISSING, OK, Observation
from allreduce_doctor.probes.permission import NEEDS_ROOT


SOURCE = "psutil: /proc/*/environ, /proc/*/maps"


def nccl_processes(host: Host) -> Observation:
    """Processes that map libnccl or carry NCCL_* variables; environments already filtered.

    Another user's /proc/PID/environ and maps are readable only with ptrace access to it
    (proc(5); fs/proc/base.c checks PTRACE_MODE_READ_FSCREDS), so a non-root user who finds no job
    has not seen the others' jobs: that is missing, not "no job running"."""
    procs = host.processes()
    value = [dict(p.to_dict(), nccl_version=_lib_version(p.nccl_lib)) for p in procs]
    unreadable = [p.pid for p in procs if not p.env_readable]
    if not procs and not host.identity().is_root:
        return Observation("", value, MISSING, SOURCE,
                           f"no NCCL job among this user's processes; other users' processes: {NEEDS_ROOT}")
    if unreadable:
        return Observation("", value, OK, SOURCE,
                           f"environment of pid {unreadable} not readable (run as the job's user or root)")
    return Observation("", value, OK, SOURCE, "")


def _lib_version(path: str) -> str | None:
    """'/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5' -> '2.21.5'. A bare libnccl.so.2 (the pip
    wheel's name) carries no full version: None, and the log's `NCCL version` line must say it."""
    name = str(path or "").rsplit("/", 1)[-1]
    _, sep, tail = name.partition("libnccl.so.")
    parts = tail.split(".")
    return tail if sep and len(parts) >= 3 and all(p.isdigit() for p in parts[:3]) else None


def host_identity(host: Host) -> Observation:
    return Observation("", host.identity().to_dict(), OK, "uname, geteuid")


BUILTINS: dict[str, Callable[[Host], Observation]] = {
    "nccl_processes": nccl_processes,
    "host_identity": host_identity,
}
