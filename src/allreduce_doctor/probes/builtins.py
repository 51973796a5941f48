"""Named Python builtins: facts that only Python can observe (through the Host)."""

from __future__ import annotations

from typing import Callable

from allreduce_doctor.hosts.base import Host
from allreduce_doctor.observations import OK, Observation


def nccl_processes(host: Host) -> Observation:
    """Processes that map libnccl or carry NCCL_* variables; environments already filtered."""
    procs = host.processes()
    value = [p.to_dict() for p in procs]
    unreadable = [p.pid for p in procs if not p.env_readable]
    reason = f"environment of pid {unreadable} not readable (run as the job's user or root)" if unreadable else ""
    return Observation("", value, OK, "psutil: /proc/*/environ, /proc/*/maps", reason)


def host_identity(host: Host) -> Observation:
    return Observation("", host.identity().to_dict(), OK, "uname, geteuid")


BUILTINS: dict[str, Callable[[Host], Observation]] = {
    "nccl_processes": nccl_processes,
    "host_identity": host_identity,
}
