"""Which process is the NCCL job, and where its files are: shared by the builtins that read the
job's view (probes/builtins.py, probes/job_view.py)."""

from __future__ import annotations

from allreduce_doctor.hosts.base import ProcessInfo


def job_of(procs: list[ProcessInfo]) -> ProcessInfo | None:
    """The NCCL job's process whose files are read: one that maps libnccl and whose environment
    was readable, else any found."""
    ranked = sorted(procs, key=lambda p: (not p.maps_nccl, not p.env_readable, p.pid))
    return ranked[0] if ranked else None


def root_of(job: ProcessInfo | None) -> str:
    """Where the job's files are: /proc/PID/root is the process's own root, its container's
    filesystem (proc(5)); without a job, this tool's own filesystem."""
    return f"/proc/{job.pid}/root" if job else ""
