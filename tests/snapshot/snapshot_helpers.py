"""Helpers for the snapshot tests: a FakeHost from dicts, and hand-built tar.gz bundles.

Imported as tests.snapshot.snapshot_helpers (pytest puts the repository root on sys.path).
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

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


def _plain(name: str) -> str:
    return "/".join(p for p in name.split("/") if p not in ("", "."))


def sealed(members: dict[str, bytes], index: bytes, manifest_doc: bytes) -> tuple[bytes, bytes]:
    """index.json and manifest.json as the writer leaves them: the index listing every member with
    its CRC-32 (unless it lists some already, or is no JSON object) and the manifest the index's
    CRC-32 (unless it has one, or is no JSON object). Hand-built bundles are then of the current
    format, which lists its members (an older one is refused: test_gutted.py)."""
    try:
        doc = json.loads(index)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and "members" not in doc:
        index = json.dumps({**doc, "members": {n: zlib.crc32(d) for n, d in sorted(members.items())}}).encode()
    try:
        man = json.loads(manifest_doc)
    except ValueError:
        man = None
    if isinstance(man, dict) and "index_crc32" not in man:
        manifest_doc = json.dumps({**man, "index_crc32": zlib.crc32(index)}).encode()
    return index, manifest_doc


def seal_entries(entries: list[tuple]) -> list[tuple]:
    """Tar entries (name, data, tar type, link) with index.json and manifest.json sealed (see
    sealed()); every entry but those two and folders is a member (a link or device as CRC 0)."""
    names = {_plain(e[0]): i for i, e in enumerate(entries)}
    top = next((n[: -len("manifest.json")] for n in names if n.endswith("manifest.json") and n.count("/") <= 1), None)
    if top is None or top + "index.json" not in names:
        return entries
    out = list(entries)
    members = {}
    for name, data, kind, _link in entries:
        plain = _plain(name)
        if plain.startswith(top) and plain not in (top + "manifest.json", top + "index.json") and kind != tarfile.DIRTYPE \
                and not name.endswith("/"):  # an old-style folder
            members[plain[len(top):]] = data if kind in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE) else b"\0"
    i_man, i_idx = names[top + "manifest.json"], names[top + "index.json"]
    index, man = sealed(members, entries[i_idx][1], entries[i_man][1])
    out[i_idx] = (entries[i_idx][0], index, *entries[i_idx][2:])
    out[i_man] = (entries[i_man][0], man, *entries[i_man][2:])
    return out


def seal_dir(root) -> None:
    """Seal a hand-built bundle folder (see sealed()), again after a change: every file, link or
    FIFO under it is a member."""
    members = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if rel in ("manifest.json", "index.json"):
                continue
            regular = os.path.isfile(path) and not os.path.islink(path)
            members[rel] = Path(path).read_bytes() if regular and os.path.getsize(path) < 1 << 20 else b"\0"
    index_path, man_path = os.path.join(root, "index.json"), os.path.join(root, "manifest.json")
    index, man = (json.loads(Path(path).read_bytes()) for path in (index_path, man_path))
    index.pop("members", None)
    man.pop("index_crc32", None)
    index, man = sealed(members, json.dumps(index).encode(), json.dumps(man).encode())
    for path, data in ((index_path, index), (man_path, man)):
        with open(path, "wb") as fh:
            fh.write(data)


def write_tar(path, members: list[tuple], manifest_doc: dict | None = None, seal: bool = True) -> None:
    """A .tar.gz holding `members` (name, data, tar type, link target), manifest.json first,
    sealed as the writer would (seal_entries) unless `seal` is False."""
    entries = list(members)
    if manifest_doc is not None:
        entries.insert(0, member("manifest.json", json.dumps(manifest_doc).encode()))
        if not any(name.endswith("index.json") for name, *_ in entries):
            entries.insert(1, member("index.json", json.dumps(RECORDED_INDEX).encode()))
    if seal:
        entries = seal_entries(entries)
    with tarfile.open(path, "w:gz") as tar:
        for name, data, kind, link in entries:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = link
            info.size = len(data) if kind == tarfile.REGTYPE else 0
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
