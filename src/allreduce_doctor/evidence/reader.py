"""Read evidence files as a stream of line-aligned byte blocks: memory stays flat.

A block holds whole lines (each ending in b"\\n"), at most about CHUNK bytes. A line longer than
MAX_LINE is cut to MAX_LINE bytes and the rest of it skipped, so a 10 MB single line (a pasted
binary, a minified file) never sits in memory whole. Decoding is per line: UTF-8, else Latin-1,
which never fails, so any byte sequence reads as some text.

Only regular files and stdin are read, and never without end: a device (/dev/zero), a FIFO, or a
file under /proc or /sys is refused, and a read stops at MAX_BYTES or after MAX_SECONDS.
"""

from __future__ import annotations

import os
import re
import select
import stat
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, cast

from allreduce_doctor.errors import DoctorError

CHUNK = 4 << 20
MAX_LINE = 1 << 16
STDIN = "-"
MAX_BYTES = 1 << 30  # an NCCL_DEBUG=INFO log of a large job is hundreds of MiB
MAX_SECONDS = 120.0  # stdin that never ends, or a writer that never writes
_KERNEL_TREES = ("/proc/", "/sys/", "/dev/")  # the node itself: read by `diagnose`, not as evidence


class EvidenceError(DoctorError):
    """An evidence file is missing, unreadable, or holds nothing we recognize."""


def display_name(path: str) -> str:
    return "<stdin>" if path == STDIN else path


def open_evidence(path: str) -> BinaryIO:
    """The file (or stdin for '-') opened for binary reading; one-line errors otherwise."""
    if path == STDIN:
        return sys.stdin.buffer
    cannot = f"{path}: cannot read evidence file"
    if os.path.realpath(path).startswith(_KERNEL_TREES):
        raise EvidenceError(f"{cannot}: it is a kernel or device file; save the text to a file and give that")
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise EvidenceError(f"{cannot}: no such file") from None
    except IsADirectoryError:
        raise EvidenceError(f"{cannot}: it is a directory") from None
    except PermissionError:
        raise EvidenceError(f"{cannot}: permission denied") from None
    except OSError as err:
        raise EvidenceError(f"{cannot}: {err.strerror or err}") from None
    mode = os.fstat(fd).st_mode
    if stat.S_ISDIR(mode):
        os.close(fd)
        raise EvidenceError(f"{cannot}: it is a directory")
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise EvidenceError(f"{cannot}: it is a {_kind(mode)}, not a regular file; save the text to a file, or pipe it to '-'")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


class BlockReader:
    """Iterate line-aligned blocks as (buffer, start, end): the lines are buffer[start:end].

    The buffer is reused from one block to the next (no allocation per block): a consumer
    copies what it keeps. Counts the bytes read and the lines that were cut.
    """

    def __init__(self, stream: BinaryIO, name: str, chunk: int = CHUNK, max_line: int = MAX_LINE,
                 max_bytes: int = MAX_BYTES, max_seconds: float = MAX_SECONDS) -> None:
        self.stream, self.name = stream, name
        self.chunk, self.max_line = chunk, max_line
        self.max_bytes, self.max_seconds = max_bytes, max_seconds
        self.bytes = 0
        self.cut_lines = 0
        self._deadline = time.monotonic() + max_seconds
        self._waitable = _waitable(stream)  # a pipe or a terminal can block: wait with a timeout
        # one read: never waits to fill (readinto1 of a buffered stream, else readinto)
        self._read: Callable[[memoryview], int | None] = getattr(stream, "readinto1", cast(Any, stream).readinto)

    def _fill(self, view: memoryview) -> int:
        cannot = f"{self.name}: cannot read evidence file"
        if self._waitable is not None:
            left = self._deadline - time.monotonic()
            ready = left > 0 and select.select([self._waitable], [], [], left)[0]
            if not ready:
                raise EvidenceError(f"{cannot}: still reading after {self.max_seconds:g} s; give a file instead")
        elif time.monotonic() > self._deadline:
            raise EvidenceError(f"{cannot}: still reading after {self.max_seconds:g} s; give a smaller file")
        try:
            got = self._read(view[: max(0, min(len(view), self.max_bytes + 1 - self.bytes))])
        except OSError as err:
            raise EvidenceError(f"{cannot}: {err.strerror or err}") from None
        got = got or 0
        self.bytes += got
        if self.bytes > self.max_bytes:
            raise EvidenceError(f"{cannot}: larger than {_size(self.max_bytes)}; give the relevant part of it")
        return got

    def __iter__(self) -> Iterator[tuple[bytearray, int, int]]:
        buf = bytearray(self.chunk + self.max_line + 1)
        view = memoryview(buf)
        have = 0  # bytes of an unfinished line kept at the front of buf
        skipping = False  # inside an overlong line: drop bytes up to its newline
        while True:
            got = self._fill(view[have: have + self.chunk])
            if not got:
                break
            total, start = have + got, 0
            if skipping:
                nl = buf.find(b"\n", 0, total)
                if nl < 0:
                    have = 0
                    continue
                start, skipping = nl + 1, False
            cut = buf.rfind(b"\n", start, total)
            if cut >= 0:
                yield buf, start, cut + 1
                start = cut + 1
            have = total - start
            if have > self.max_line:
                self.cut_lines += 1
                line = bytearray(buf[start: start + self.max_line]) + b"\n"
                yield line, 0, len(line)
                have, skipping = 0, True
            elif have:
                buf[0:have] = buf[start:total]
        if have and not skipping:
            line = bytearray(buf[0:have]) + b"\n"
            yield line, 0, len(line)


def _waitable(stream) -> int | None:
    """The descriptor to wait on when reads from `stream` can block (not a regular file)."""
    try:
        fd = stream.fileno()
        return None if stat.S_ISREG(os.fstat(fd).st_mode) else fd
    except (AttributeError, OSError, ValueError):  # an in-memory stream never blocks
        return None


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit} bytes"


def decode(raw) -> str:
    """One line of bytes (bytes, bytearray or memoryview) as text, without its line ending."""
    raw = bytes(raw)
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


_CONTROL_RE = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")


def is_binary(raw: bytes | bytearray) -> bool:
    """A NUL byte, or many control characters: not text anyone pasted on purpose."""
    if _CONTROL_RE.search(raw) is None:
        return False
    if b"\x00" in raw:
        return True
    sample = raw[:512]
    return len(_CONTROL_RE.findall(sample)) * 10 > len(sample)
