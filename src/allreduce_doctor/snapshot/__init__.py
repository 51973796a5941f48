"""Snapshot bundles: member names (names.py), safe reading (bundle.py), JSON checks (schema.py),
safe writing (writer.py).

Hosts use it: `hosts.recording.RecordingHost` writes a bundle, `hosts.snapshot.SnapshotHost`
answers from one.
"""

from allreduce_doctor.snapshot.bundle import MAX_MEMBER_BYTES, MAX_TOTAL_BYTES, Bundle, open_bundle
from allreduce_doctor.snapshot.names import (
    ARCHIVE_SUFFIXES,
    FORMAT_NAME,
    FORMAT_VERSION,
    NOT_CAPTURED,
    command_key,
    command_member,
    file_member,
)

__all__ = [
    "ARCHIVE_SUFFIXES",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MAX_MEMBER_BYTES",
    "MAX_TOTAL_BYTES",
    "NOT_CAPTURED",
    "Bundle",
    "command_key",
    "command_member",
    "file_member",
    "open_bundle",
]
