"""Small helpers shared by the parser modules (not a parser module itself)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from allreduce_doctor.errors import ParseError

# ASCII digits only: str.isdigit()/\d accept Unicode digits that int() may then reject.
_INT_RE = re.compile(r"[+-]?[0-9]+", re.ASCII)
_HEX_RE = re.compile(r"0[xX][0-9a-fA-F]+", re.ASCII)
# Bounded so a run of digits can never become float('inf') (not valid JSON).
NUM = r"[0-9]{1,15}(?:\.[0-9]{1,15})?"
_NUM_RE = re.compile(NUM + r"(?![0-9.])", re.ASCII)


def fail(what: str, got: str | None = None) -> ParseError:
    """A one-line ParseError: 'expected <what>' plus a short look at what came instead."""
    if got is None:
        return ParseError(f"expected {what}")
    snippet = " ".join(got.split())
    if not snippet:
        return ParseError(f"expected {what}, got empty input")
    if len(snippet) > 60:
        snippet = snippet[:57] + "..."
    return ParseError(f"expected {what}, got {snippet!r}")


def require(text: str, what: str) -> str:
    """Reject empty or whitespace-only input (a capture that returned nothing)."""
    if not isinstance(text, str) or not text.strip():
        raise fail(what, "")
    return text


def lines(text: str) -> Iterator[str]:
    """Non-blank lines with trailing whitespace removed (web copies add trailing spaces)."""
    for line in text.splitlines():
        line = line.rstrip()
        if line:  # what rstrip() leaves of a blank line is empty
            yield line


def indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def kv(line: str) -> tuple[str, str] | None:
    """Split `key: value` on the first colon; None when there is no key."""
    key, sep, value = line.partition(":")
    key = key.strip()
    return (key, value.strip()) if sep and key else None


def snake(key: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", key.lower()).strip("_")


def to_int(value: str) -> int | None:
    """Decimal or 0x hex integer, else None."""
    value = value.strip()
    try:
        if value.isascii() and value.isdigit():  # the usual plain counter, without a regex
            return int(value)
        if _INT_RE.fullmatch(value):
            return int(value)
        if _HEX_RE.fullmatch(value):
            return int(value, 16)
    except ValueError:  # more digits than Python's int-from-str limit
        return None
    return None


def lead_int(value: str) -> int | None:
    """The integer a value starts with: '4096 (5)' -> 4096, '2X (16)' -> 2."""
    m = re.match(r"\s*([0-9]{1,30})(?![0-9])", value, re.ASCII)
    return int(m.group(1)) if m else None


def lead_num(value: str) -> float | None:
    """The number a value starts with: '50.0 Gbps (64)' -> 50.0."""
    m = _NUM_RE.match(value.strip())
    return float(m.group(0)) if m else None
