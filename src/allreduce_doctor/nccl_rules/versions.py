"""NCCL (and kernel) version strings as the rules compare them."""

from __future__ import annotations

import re

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def version_tuple(text) -> tuple[int, ...] | None:
    """'2.21.5' / '2.21.5-1' / 'libnccl.so.2.21.5' / '6.8.0-45-generic' -> (2, 21, 5); None if unreadable."""
    m = _VERSION.search(str(text or ""))
    return tuple(int(g) for g in m.groups() if g is not None) if m else None
