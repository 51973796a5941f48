"""Reading a bundle that trusts nothing (the format is in names.py).

Reading refuses, with one line naming the bundle and the problem: names that leave the
root, links, devices and FIFOs, members over MAX_MEMBER_BYTES, bundles over MAX_TOTAL_BYTES,
damaged archives and manifests. An archive is read into memory once (tarscan.py parses its
tar stream); a directory lazily, every member checked (no link on the way, a regular file,
under the root) as it is read.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import zlib
from pathlib import Path
from typing import cast

from allreduce_doctor.errors import BundleError
from allreduce_doctor.snapshot import schema, tarscan
from allreduce_doctor.snapshot.inflate import InflatedTooLarge, inflate
from allreduce_doctor.snapshot.names import (
    DAMAGED,
    INDEX,
    MANIFEST,
    WHAT_TO_GIVE,
    is_archive_name,
    sample_prefix,
    shown,
)
from allreduce_doctor.snapshot.tarscan import TarDamage

MAX_MEMBER_BYTES = 16 << 20
MAX_TOTAL_BYTES = 512 << 20


def _mib(size: int) -> str:
    return f"{size >> 20} MiB" if size % (1 << 20) == 0 else f"{size} bytes"


# --- opening ------------------------------------------------------------------------------
def open_bundle(path: str | os.PathLike, max_bytes: int | None = None, over_hint: str = "") -> Bundle:
    """Open a bundle directory or .tar.gz; manifest.json and index.json are read and checked.
    `max_bytes` (MAX_TOTAL_BYTES when None) bounds what it holds; `over_hint` ends the refusal
    of a bundle over it (what to do instead)."""
    label = str(path)
    limit = (max_bytes if max_bytes is not None else MAX_TOTAL_BYTES, over_hint)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise BundleError(f"{label}: no such file or directory; {WHAT_TO_GIVE}") from None
    except OSError as err:
        raise BundleError(f"{label}: cannot open ({err.strerror}); {WHAT_TO_GIVE}") from None
    if stat.S_ISDIR(st.st_mode):
        return DirectoryBundle(Path(path), label, limit)
    if stat.S_ISREG(st.st_mode) and (is_archive_name(path) or _looks_gzip(path, label)):
        return ArchiveBundle(Path(path), label, limit)
    raise BundleError(f"{label}: neither a directory nor a .tar.gz archive; {WHAT_TO_GIVE}")


def _looks_gzip(path: str | os.PathLike, label: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(2) == b"\x1f\x8b"
    except OSError as err:
        raise BundleError(f"{label}: cannot open ({err.strerror}); {WHAT_TO_GIVE}") from None


class OlderBundle(BundleError):
    """A bundle of the older format: it lists no members and their checksums (refused)."""


# What an older bundle cannot vouch for, and so why it is not read (issue 32 item 1): a member lost
# from it would replay as a file the node did not have, and a gutted bundle as a healthy node.
OLDER = ("{what} (an older allreduce-doctor wrote it), so none of its members can be vouched for: a lost one "
         "would read as a file the node did not have; collect the snapshot again with this version")


class Bundle:
    """What both kinds share: the checked manifest and index, text and JSON of members."""

    limit: tuple[int, str]  # (most bytes of all members, the hint when over): set by each kind

    def __init__(self, path: Path, label: str) -> None:
        self.path = path
        self.label = label
        self._listed: dict[str, int] = {}  # every member index.json lists, with its CRC-32
        self.manifest = schema.check_manifest(label, self.load_json(MANIFEST, required=True))
        raw_index = self._member(INDEX)
        if raw_index is None:  # every recording writes one: without it no failure, glob or process is known
            raise self.fail(f"no {INDEX}; {DAMAGED}")
        expected = self.manifest["index_crc32"]
        if expected is None:
            raise OlderBundle(f"{label}: {OLDER.format(what=f'{MANIFEST} holds no index_crc32')}")
        if zlib.crc32(raw_index) != expected:
            raise self.fail(f"{INDEX} does not match the checksum in {MANIFEST} (changed or cut); {DAMAGED}")
        self.index = schema.check_index(label, self._parse_json(INDEX, raw_index))
        if self.index["members"] is None:
            raise OlderBundle(f"{label}: {OLDER.format(what=f'{INDEX} lists no members and their checksums')}")
        self._check_samples()
        self._check_members()

    def _check_samples(self) -> None:
        """The first sample holds its globs: every collection globs the interfaces and ports it
        fans out over (probes/*.yaml enumerators), and a bundle without them would replay as a
        node with no hardware, that is as healthy. (A later sample may be empty when the time
        budget was spent first: its reads replay as not captured.)"""
        first = str(self.manifest["samples"][0]["index"])
        if not self.index["globs"].get(first):
            raise self.fail(f"{INDEX} records no glob of the first sample (the interfaces and ports); {DAMAGED}")

    def _check_members(self) -> None:
        """Every member the index lists is there, as written (its CRC-32), and of a sample the
        manifest lists: a bundle is complete or refused. Checked at open, all of them, so a
        damaged member no probe of this diagnosis reads still says the copy is bad."""
        listed = self.index["members"]
        samples = {sample_prefix(s["index"]) for s in self.manifest["samples"]}
        for name, crc in listed.items():
            prefix = "/".join(name.split("/", 2)[:2]) + "/" if name.startswith("samples/") else ""
            if prefix not in samples:
                raise self.fail(f"{INDEX} lists {shown(name)} of a sample {MANIFEST} does not list; {DAMAGED}")
            data = self._member(name)
            if data is None:
                raise self.fail(f"member {shown(name)} listed in {INDEX} is not in the bundle; {DAMAGED}")
            if zlib.crc32(data) != crc:
                raise self.fail(f"member {shown(name)} does not match its checksum in {INDEX} (changed or cut); {DAMAGED}")
        self._listed = listed

    def fail(self, problem: str) -> BundleError:
        return BundleError(f"{self.label}: {problem}")

    def member(self, name: str) -> bytes | None:
        """A member's bytes; one index.json does not list is not part of the recording (added
        later) and reads as absent."""
        return self._member(name) if self._recorded(name) else None

    def _recorded(self, name: str) -> bool:
        return name in self._listed or name in (MANIFEST, INDEX)

    def _member(self, name: str) -> bytes | None:  # pragma: no cover - overridden
        raise NotImplementedError

    def text(self, name: str) -> str | None:
        data = self._member_buffer(name) if self._recorded(name) else None
        return None if data is None else str(data, "utf-8", "replace")

    def _member_buffer(self, name: str):
        """The member's bytes, or a view of them where the kind holds one (decoded without a copy)."""
        return self._member(name)

    def load_json(self, name: str, required: bool = False) -> object | None:
        data = self.member(name)
        if data is None:
            if required:
                raise self.fail(f"no {name}; this is not an allreduce-doctor bundle")
            return None
        return self._parse_json(name, data)

    def _parse_json(self, name: str, data: bytes) -> object:
        try:
            return json.loads(data.decode("utf-8", errors="replace"))
        except json.JSONDecodeError as err:
            detail = f"line {err.lineno} column {err.colno}: {err.msg}"
        except (ValueError, RecursionError) as err:
            detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise self.fail(f"{name} is not valid JSON ({detail}); {DAMAGED}")

    def _refuse_kind(self, name: str, kind: str) -> BundleError:
        return self.fail(f"member {shown(name)} is a {kind}, not a regular file; refusing to read it")

    def _refuse_size(self, name: str, size: int) -> BundleError:
        return self.fail(
            f"member {shown(name)} is {size} bytes, over the {_mib(MAX_MEMBER_BYTES)} limit "
            "for one member; refusing to read it"
        )

    def _refuse_total(self) -> BundleError:
        max_bytes, hint = self.limit
        return self.fail(f"members total over the {_mib(max_bytes)} limit for a bundle; refusing to read it{hint}")

    def close(self) -> None:
        """Let go of what was read (a fleet worker diagnoses the next bundle in this memory)."""
        self._drop()

    def _drop(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def _refuse_escape(self, name: str) -> BundleError:
        return self.fail(f"member {shown(name)} escapes the bundle; refusing to read it")


_MODE_KINDS = (
    (stat.S_ISLNK, "symbolic link"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISSOCK, "socket"),
)


class DirectoryBundle(Bundle):
    """A bundle directory, read lazily: each member checked as it is first read, then cached."""

    def __init__(self, path: Path, label: str, limit: tuple[int, str] = (MAX_TOTAL_BYTES, "")) -> None:
        self.limit = limit
        self._root = os.path.realpath(path)
        self._lock = threading.Lock()
        self._cache: dict[str, bytes | None] = {}
        self._total = 0
        super().__init__(path, label)

    def _drop(self) -> None:
        with self._lock:
            self._cache.clear()

    def _member(self, name: str) -> bytes | None:
        with self._lock:
            if name in self._cache:
                return self._cache[name]
            data = self._read(name)
            if data is not None:
                self._total += len(data)
                if self._total > self.limit[0]:
                    raise self._refuse_total()
            self._cache[name] = data
            return data

    def _read(self, name: str) -> bytes | None:
        parts = name.split("/")
        if name.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\x00" in name:
            raise self._refuse_escape(name)
        current = self._root
        for i, part in enumerate(parts):
            current = os.path.join(current, part)
            try:
                st = os.lstat(current)
            except (FileNotFoundError, NotADirectoryError):
                return None
            except OSError as err:
                raise self.fail(f"cannot read member {shown(name)} ({err.strerror}); check its permissions") from err
            shown_name = "/".join(parts[: i + 1])
            for test, kind in _MODE_KINDS:
                if test(st.st_mode):
                    raise self._refuse_kind(shown_name, kind)
            if i < len(parts) - 1 and not stat.S_ISDIR(st.st_mode):
                return None  # a file where a folder would be: that member is not there
        if stat.S_ISDIR(st.st_mode):
            return None
        if not stat.S_ISREG(st.st_mode):
            raise self._refuse_kind(name, "special file")
        if st.st_size > MAX_MEMBER_BYTES:
            raise self._refuse_size(name, st.st_size)
        real = os.path.realpath(current)
        if os.path.commonpath([real, self._root]) != self._root:
            raise self._refuse_escape(name)
        return self._read_regular(name, current)

    def _read_regular(self, name: str, path: str) -> bytes:
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path, flags)
        except OSError as err:
            raise self.fail(f"cannot read member {shown(name)} ({err.strerror}); check its permissions") from err
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped after the lstat
                raise self._refuse_kind(name, "special file")
            data = fh.read(MAX_MEMBER_BYTES + 1)
        if len(data) > MAX_MEMBER_BYTES:
            raise self._refuse_size(name, len(data))
        return data


_SLACK = 16 << 20  # tar headers, padding and directory entries on top of member data


class ArchiveBundle(Bundle):
    """A .tar.gz bundle: inflated whole (bounded), then every regular member kept in memory."""

    def __init__(self, path: Path, label: str, limit: tuple[int, str] = (MAX_TOTAL_BYTES, "")) -> None:
        self.limit = limit
        self._members = self._load(path, label)
        super().__init__(path, label)

    def _drop(self) -> None:
        self._members = {}  # the views go, and with them the inflated stream they point into

    def _member(self, name: str) -> bytes | None:
        view = self._members.get(name)
        return None if view is None else view.tobytes()

    def _member_buffer(self, name: str) -> memoryview | None:
        return self._members.get(name)

    def _load(self, path: Path, label: str) -> dict[str, memoryview]:
        self.label = label
        try:
            raw = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError as err:
            raise self.fail(f"cannot open ({err.strerror}); {WHAT_TO_GIVE}") from None
        try:
            with raw:
                if os.fstat(raw.fileno()).st_size > self.limit[0] + _SLACK:  # gzip never shrinks by much
                    raise self._refuse_total()
                members = self._read_members(self._inflate(raw))
        except BundleError:
            raise
        except TarDamage as err:
            raise self._damaged(str(err)) from None
        except (zlib.error, EOFError, OSError, ValueError, OverflowError) as err:
            raise self._damaged(" ".join(str(err).split())[:200] or type(err).__name__) from None
        return _strip_single_top(members)

    def _damaged(self, detail: str) -> BundleError:
        return self.fail(f"truncated or corrupt archive ({detail}); collect the snapshot again")

    def _inflate(self, raw) -> bytes | bytearray:
        try:
            return inflate(raw, self.limit[0] + _SLACK)
        except InflatedTooLarge:
            raise self._refuse_total() from None

    def _read_members(self, buf: bytes | bytearray) -> dict[str, memoryview]:
        """Members as views into the inflated stream: their data is never copied while loading."""
        view = memoryview(buf)
        members: dict[str, memoryview] = {}
        total = 0
        for raw_name, kind, size, offset in tarscan.scan(cast(bytes, buf)):  # slices of a bytearray read alike
            name = self._member_name(raw_name)
            if kind == tarscan.DIRECTORY:
                continue
            if kind != tarscan.REGULAR:
                raise self._refuse_kind(name or raw_name, _tar_kind(kind))
            if size > MAX_MEMBER_BYTES:
                raise self._refuse_size(name, size)
            total += size
            if total > self.limit[0]:
                raise self._refuse_total()
            if name in members:
                raise self.fail(f"member {shown(name)} appears twice; {DAMAGED}")
            data = view[offset : offset + size]
            if len(data) != size:
                raise TarDamage("unexpected end of data")
            members[name] = data
        return members

    def _member_name(self, raw: str) -> str:
        if "//" not in raw and "/." not in raw and not raw.startswith(("/", ".")) and not raw.endswith("/"):
            return raw  # already plain: no empty, "." or ".." part (the usual case, made fast)
        parts = [p for p in raw.split("/") if p not in ("", ".")]
        if raw.startswith("/") or ".." in parts:
            raise self._refuse_escape(raw)
        return "/".join(parts)


_TAR_KINDS = {b"1": "hard link", b"2": "symbolic link", b"3": "character device", b"4": "block device", b"6": "FIFO"}


def _tar_kind(kind: bytes) -> str:
    return _TAR_KINDS.get(kind) or f"special member (tar type {kind!r})"


def _strip_single_top(members: dict[str, memoryview]) -> dict[str, memoryview]:
    """Accept an archive of the bundle folder itself (one top folder holding manifest.json)."""
    if MANIFEST in members or not members:
        return members
    tops = {name.split("/", 1)[0] for name in members}
    if len(tops) == 1:
        top = tops.pop() + "/"
        if top + MANIFEST in members:
            return {name[len(top) :]: data for name, data in members.items() if name.startswith(top)}
    return members
