"""Text for Textual content markup (no heavy imports: the first screen uses it)."""

from __future__ import annotations

from allreduce_doctor.sanitize import one_line


def esc(value) -> str:
    """Plain text made literal in content markup: every '[' escaped (Textual's escape() leaves
    '[FAIL]' as a tag), a trailing backslash kept away from the closing tag."""
    text = one_line(" ".join(str(value).split())).replace("[", "\\[")
    return text + " " if text.endswith("\\") else text
