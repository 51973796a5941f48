"""One sanitizer for text bound for a terminal or a document: control characters shown escaped.

A hostname, a read-failure reason in a bundle or a pasted log line can hold ESC/OSC sequences
(retitle the terminal, move the cursor, paint a fake verdict: ECMA-48 sections 5.3-5.6), C1
controls (U+009B is CSI to xterm), bidirectional overrides (U+202E reorders what follows: "Trojan
Source", CVE-2021-42574) and line breaks. Each is shown as \\uXXXX (\\n, \\r and \\t for the usual
three): the same spelling as a JSON escape, so a JSON document that passes through stays valid and
means the same.
"""

from __future__ import annotations

import re

# C0 but tab and newline, DEL, C1, the bidi marks and overrides (Unicode UAX #9), line/paragraph separators
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_IN_DOCUMENT = re.compile(f"[{_CONTROLS}]")  # a whole document keeps its lines and tabs
_IN_FIELD = re.compile(f"[\t\n{_CONTROLS}]")  # one field is one line
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _shown(match: re.Match) -> str:
    ch = match.group()
    return _NAMED.get(ch) or f"\\u{ord(ch):04x}"


def terminal(text: str) -> str:
    """A whole document (report, JSON, ticket) fit for a terminal: its newlines and tabs kept."""
    return _IN_DOCUMENT.sub(_shown, text)


def one_line(text: str) -> str:
    """One field (a hostname, a reason, a value): every control character escaped, newlines too."""
    return _IN_FIELD.sub(_shown, text)


def fields(value):
    """`value` (a diagnosis dict) with one_line() applied to every string in it, keys included."""
    if isinstance(value, str):
        return one_line(value)
    if isinstance(value, dict):
        return {fields(k) if isinstance(k, str) else k: fields(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [fields(v) for v in value]
    return value
