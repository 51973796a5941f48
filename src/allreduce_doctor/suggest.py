"""Did-you-mean: the nearest valid name for a misspelt one (difflib)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The candidate closest to `word`, or None when nothing is close enough."""
    pool = sorted({c for c in candidates if c != word})
    matches = difflib.get_close_matches(word, pool, n=1, cutoff=cutoff)
    return matches[0] if matches else None


def hint(suggestion: str | None) -> str:
    """The suffix appended to an error line: " did you mean 'x'?" or ""."""
    return f" did you mean '{suggestion}'?" if suggestion else ""
