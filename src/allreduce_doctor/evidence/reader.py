"""Read evidence files as a stream of line-aligned byte blocks: memory stays flat.

A block holds whole lines (each ending in b"\\n"), at most about CHUNK bytes. A line longer than
MAX_LINE is cut to MAX_LINE bytes and the rest of it skipped, so a 10 MB single line (a pasted
binary, a minified file) never sits in memory whole. Decoding is per line: UTF-8, else Latin-1,
which never fails, so any byte sequence reads as some text.
"""

from __future__ import annotations

import re
import sys
from typing import BinaryIO, Iterator

from allreduce_doctor.errors import DoctorError

CHUNK = 4 << 20
MAX_LINE = 1 << 16
STDIN = "-"


class EvidenceError(DoctorError):
    """An evidence file is missing, unreadable, or holds nothing we recognize."""


def display_name(path: str) -> str:
    return "<stdin>" if path == STDIN else path


def open_evidence(path: str) -> BinaryIO:
    """The file (or stdin for '-') opened for binary reading; one-line errors otherwise."""
    if path == STDIN:
        return sys.stdin.buffer
    try:
        return open(path, "rb")  # noqa: SIM115 - closed by the caller
    except FileNotFoundError:
        raise EvidenceError(f"{path}: cannot read evidence file: no such file") from None
    except IsADirectoryError:
        raise EvidenceError(f"{path}: cannot read evidence file: it is a directory") from None
    except PermissionError:
        raise EvidenceError(f"{path}: cannot read evidence file: permission denied") from None
    except OSError as err:
        raise EvidenceError(f"{path}: cannot read evidence file: {err.strerror or err}") from None


class BlockReader:
    """Iterate line-aligned blocks as (buffer, start, end): the lines are buffer[start:end].

    The buffer is reused from one block to the next (no allocation per block): a consumer
    copies what it keeps. Counts the bytes read and the lines that were cut.
    """

    def __init__(self, stream: BinaryIO, name: str, chunk: int = CHUNK, max_line: int = MAX_LINE) -> None:
        self.stream, self.name = stream, name
        self.chunk, self.max_line = chunk, max_line
        self.bytes = 0
        self.cut_lines = 0

    def _fill(self, view: memoryview) -> int:
        try:
            got = self.stream.readinto(view)
        except OSError as err:
            raise EvidenceError(f"{self.name}: cannot read evidence file: {err.strerror or err}") from None
        got = got or 0
        self.bytes += got
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


def is_binary(raw: bytes) -> bool:
    """A NUL byte, or many control characters: not text anyone pasted on purpose."""
    if _CONTROL_RE.search(raw) is None:
        return False
    if b"\x00" in raw:
        return True
    sample = raw[:512]
    return len(_CONTROL_RE.findall(sample)) * 10 > len(sample)
