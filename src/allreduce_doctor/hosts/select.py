"""The Host a command line names: a bundle, or this node."""

from __future__ import annotations


def open_host(snapshot: str | None):
    """The bundle at `snapshot`, else this node."""
    if snapshot:
        from allreduce_doctor.hosts.snapshot import SnapshotHost

        return SnapshotHost(snapshot)
    from allreduce_doctor.hosts.live import LiveHost

    return LiveHost()
