"""RecordingHost: a Host that delegates every call to another and writes each answer,
failures included, into a bundle for the current sample. Replay through SnapshotHost is exact.

Files and command records are written as they arrive (into a private staging folder next to
the output); finish() adds manifest.json and index.json and moves the folder into place, or
packs it into a .tar.gz that appears atomically.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from pathlib import Path

from allreduce_doctor import __version__
from allreduce_doctor.errors import BundleError
from allreduce_doctor.hosts.base import (
    FILE_OK,
    CommandResult,
    FileResult,
    Host,
    HostIdentity,
    ProcessInfo,
)
from allreduce_doctor.redact import PEM_BEGIN, redact_tokens_only
from allreduce_doctor.snapshot.names import (
    FORMAT_NAME,
    FORMAT_VERSION,
    INDEX,
    MANIFEST,
    command_member,
    file_member,
    is_archive_name,
)
from allreduce_doctor.snapshot.writer import (
    MemberWriter,
    check_output,
    install_directory,
    make_staging,
    pack_archive,
)

FABRICS = ("ib", "roce", "mixed", "none", "")


class RecordingHost:
    kind = "recording"

    def __init__(self, inner: Host, out: str | Path) -> None:
        self.inner = inner
        self.out = Path(out)
        self._archive = is_archive_name(self.out)
        check_output(self.out, self._archive)
        self._staging = make_staging(self.out)
        self._writer = MemberWriter(self._staging, str(self.out))
        self._lock = threading.Lock()
        self._reads: dict[str, dict[str, dict]] = {}
        self._globs: dict[str, dict[str, list[str]]] = {}
        self._links: dict[str, str | None] = {}
        self._which: dict[str, str | None] = {}
        self._exports: dict[str, dict[str, list[str] | None]] = {}
        self._processes: list[dict] | None = None
        self._identity: HostIdentity | None = None
        self._samples = [{"index": inner.sample, "time": inner.sample_time()}]
        self._interval = 0.0
        self._closed = False

    # --- delegated calls, each answer recorded ------------------------------------------------
    def identity(self) -> HostIdentity:
        identity = self.inner.identity()
        with self._lock:
            self._identity = identity
        return identity

    def read(self, path: str) -> FileResult:
        result = self.inner.read(path)
        with self._lock:
            self._record_read(path, result)
        return result

    def glob(self, pattern: str) -> list[str]:
        found = self.inner.glob(pattern)
        with self._lock:
            self._open_check()
            self._globs.setdefault(str(self.inner.sample), {})[pattern] = list(found)
        return found

    def readlink(self, path: str) -> str | None:
        target = self.inner.readlink(path)
        with self._lock:
            self._open_check()
            self._links[path] = target
        return target

    def which(self, name: str) -> str | None:
        found = self.inner.which(name)
        with self._lock:
            self._open_check()
            self._which[name] = found
        return found

    def elf_exports(self, path: str, prefix: str) -> list[str] | None:
        found = self.inner.elf_exports(path, prefix)
        with self._lock:
            self._open_check()
            self._exports.setdefault(prefix, {})[path] = None if found is None else list(found)
        return found

    def run(self, argv: list[str], timeout: float, key: str = "") -> CommandResult:
        result = self.inner.run(argv, timeout, key)
        member = command_member(key, argv, self.inner.sample)
        with self._lock:
            self._open_check()
            if not self._writer.write(member, command_record(result)):
                raise self._writer.clash(member)
        return result

    def processes(self) -> list[ProcessInfo]:
        found = self.inner.processes()
        with self._lock:
            self._open_check()
            self._processes = [p.to_dict() for p in found]
        return found

    # --- samples ------------------------------------------------------------------------------
    @property
    def sample(self) -> int:
        return self.inner.sample

    def sample_time(self) -> float:
        return self.inner.sample_time()

    def next_sample(self, interval: float) -> None:
        self.inner.next_sample(interval)
        with self._lock:
            self._interval = float(interval)
            self._samples.append({"index": self.inner.sample, "time": self.inner.sample_time()})

    # --- the bundle ---------------------------------------------------------------------------
    def finish(self, fabric: str = "", catalogue_hash: str = "", extra: dict | None = None) -> Path:
        """Write manifest.json and index.json and put the bundle at `out`; returns `out`."""
        if fabric not in FABRICS:
            raise ValueError(f"fabric must be one of {FABRICS}, not {fabric!r}")
        identity = self._identity or self.inner.identity()
        with self._lock:
            self._open_check()
            manifest = {
                "format": FORMAT_NAME,
                "format_version": FORMAT_VERSION,
                "tool_version": __version__,
                "host": identity.to_dict(),
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "fabric": fabric,
                "probe_catalogue_hash": catalogue_hash,
                "interval": self._interval,
                "samples": self._samples,
                "extra": dict(extra or {}),
            }
            index = {
                "reads": self._reads,
                "globs": self._globs,
                "links": self._links,
                "which": self._which,
                # only when a library was read: bundles of other nodes stay as they were
                **({"exports": self._exports} if self._exports else {}),
                "processes": self._processes,
                "members": dict(sorted(self._writer.checksums.items())),
            }
            # serialised first: a bad `extra` raises here and the recording stays open
            index_data, _ = _dumps(index), _dumps(manifest)
            self._closed = True
        try:
            if not self._writer.write(INDEX, index_data):
                raise self._writer.clash(INDEX)
            manifest["index_crc32"] = self._writer.checksums[INDEX]  # an edited index is refused
            if not self._writer.write(MANIFEST, _dumps(manifest)):
                raise self._writer.clash(MANIFEST)
            if self._archive:
                pack_archive(self._staging, self.out)
                shutil.rmtree(self._staging, ignore_errors=True)
            else:
                install_directory(self._staging, self.out)
        except OSError as err:  # a move or the archive failed: disk full, permissions
            self.abort()
            raise BundleError(
                f"{self.out}: cannot write the bundle ({err.strerror or err}); check free space and permissions"
            ) from None
        except BaseException:
            self.abort()
            raise
        return self.out

    def abort(self) -> None:
        """Drop the partial bundle (the staging folder); `out` is left as it was."""
        with self._lock:
            self._closed = True
        shutil.rmtree(self._staging, ignore_errors=True)

    # --- internals ------------------------------------------------------------------------------
    def _open_check(self) -> None:
        if self._closed:
            raise RuntimeError(f"the recording into {self.out} is already finished")

    def _record_read(self, path: str, result: FileResult) -> None:
        """An ok read of an absolute path goes to files/...; everything else (failures, a result
        path that differs from the one asked, a name that cannot be a member) to index.json."""
        self._open_check()
        sample = self.inner.sample
        reads = self._reads.setdefault(str(sample), {})
        member = file_member(path, sample)
        stored = False
        if result.status == FILE_OK and member is not None:
            stored = self._writer.write(member, (result.text or "").encode("utf-8", "replace"))
        if stored and result.path == path and not result.reason:
            reads.pop(path, None)
            return
        entry: dict = {"status": result.status, "reason": result.reason}
        if result.path != path:
            entry["path"] = result.path
        if result.status == FILE_OK and not stored:
            entry["text"] = result.text or ""
        reads[path] = entry


STREAM_CHUNK = 1 << 16  # characters of a command's output encoded at a time
# Every token shape redact.py knows is made of these characters (a PEM block aside): a chunk that
# ends on any other character cuts no token, so the writer's redaction of each chunk finds them all.
_TOKEN_CHARS = re.compile(r"[^A-Za-z0-9_.-]")


def command_record(result: CommandResult):
    """The command's record (CommandResult.to_dict() as JSON), in chunks: the output is JSON-encoded
    a slice at a time, each slice ending where no token can continue, so the record never exists
    whole in memory and MemberWriter's redaction of each chunk misses nothing. A private key
    block spans lines: output holding one is redacted whole first (rare; the same rule)."""
    doc = result.to_dict()
    texts = {name: doc.pop(name) for name in ("stdout", "stderr")}
    yield _dumps(doc)[:-2]  # the small fields, without the closing "\n}"
    for name, text in texts.items():
        if PEM_BEGIN in text:
            text = redact_tokens_only(text)
        yield f',\n  "{name}": "'.encode()
        start = 0
        while start < len(text):
            end = _chunk_end(text, start)
            yield json.dumps(text[start:end], ensure_ascii=False)[1:-1].encode("utf-8", "replace")
            start = end
        yield b'"'
    yield b"\n}"


def _chunk_end(text: str, start: int) -> int:
    end = start + STREAM_CHUNK
    if end >= len(text):
        return len(text)
    cut = max(text.rfind("\n", start, end), text.rfind(" ", start, end))
    if cut > start:
        return cut + 1
    found = _TOKEN_CHARS.search(text, end)  # one long run of token characters: to its end
    return found.end() if found else len(text)


def _dumps(doc: dict) -> bytes:
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False).encode("utf-8", "replace")
