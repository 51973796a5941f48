"""Helpers for the snapshot tests: a FakeHost from dicts, and hand-built tar.gz bundles.

Imported as tests.snapshot.snapshot_helpers (pytest puts the repository root on sys.path).
"""

from __future__ import annotations

import io
import json
import tarfile
from dataclasses import dataclass, field

from allreduce_doctor.hosts.base import CommandResult, FileResult, HostIdentity, ProcessInfo
from tests.hostclock import SampleClock


@dataclass
class FakeHost(SampleClock):
    """Answers the Host protocol from dicts. files: {sample: {path: FileResult}};
    commands: {(sample, key): CommandResult}; globs: {sample: {pattern: [paths]}}."""

    files: dict = field(default_factory=dict)
    globs: dict = field(default_factory=dict)
    links: dict = field(default_factory=dict)
    whiches: dict = field(default_factory=dict)
    commands: dict = field(default_factory=dict)
    procs: list = field(default_factory=list)
    ident: HostIdentity = field(default_factory=lambda: HostIdentity("gpu-node-07", "5.15.0-91-generic", 1000, False))
    kind: str = "fake"
    _sample: int = 0
    _time: float = 1000.25

    def identity(self) -> HostIdentity:
        return self.ident

    def read(self, path: str) -> FileResult:
        found = self.files.get(self._sample, {}).get(path)
        return found if found is not None else FileResult(path, "missing", reason="no such file")

    def glob(self, pattern: str) -> list[str]:
        return sorted(self.globs.get(self._sample, {}).get(pattern, []))

    def readlink(self, path: str) -> str | None:
        return self.links.get(path)

    def which(self, name: str) -> str | None:
        return self.whiches.get(name)

    def elf_exports(self, path: str, prefix: str) -> list[str] | None:
        return None

    def run(self, argv: list[str], timeout: float, key: str = "") -> CommandResult:
        found = self.commands.get((self._sample, key))
        return found if found is not None else CommandResult(list(argv), None, error="not found", duration=0.001)

    def processes(self) -> list[ProcessInfo]:
        return list(self.procs)


def manifest(**changes) -> dict:
    doc = {
        "format": "allreduce-doctor-bundle",
        "format_version": 1,
        "tool_version": "0.1.0",
        "host": {"hostname": "n1", "kernel": "6.1", "euid": 0, "is_root": True},
        "created": "2024-05-01T12:00:00Z",
        "fabric": "roce",
        "probe_catalogue_hash": "abc",
        "interval": 1.0,
        "samples": [{"index": 0, "time": 10.0}],
        "extra": {},
    }
    doc.update(changes)
    return doc


# the least a recording holds: one glob of the first sample (an empty index is a gutted bundle)
RECORDED_INDEX = {"globs": {"0": {"/sys/class/net/*": []}}}


def member(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, link: str = "") -> tuple:
    return (name, data, kind, link)


def write_tar(path, members: list[tuple], manifest_doc: dict | None = None) -> None:
    """A .tar.gz holding `members` (name, data, tar type, link target), manifest.json first."""
    entries = list(members)
    if manifest_doc is not None:
        entries.insert(0, member("manifest.json", json.dumps(manifest_doc).encode()))
        if not any(name.endswith("index.json") for name, *_ in entries):
            entries.insert(1, member("index.json", json.dumps(RECORDED_INDEX).encode()))
    with tarfile.open(path, "w:gz") as tar:
        for name, data, kind, link in entries:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = link
            info.size = len(data) if kind == tarfile.REGTYPE else 0
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
