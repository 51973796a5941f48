"""Jira v2 wiki markup (the description of REST API v2, and Jira Data Center's editor).

Every value is escaped: `| { } [ ] * !` always (tables, macros, links, bold, images), and
`_ + ^ ~ -` and `??` where they could open or close an effect; a backslash, which Jira reads as
an escape or (doubled) a line break, is shown as a fullwidth reverse solidus. Raw evidence goes in
{noformat} blocks, where nothing is markup except the closing macro, which cannot occur in it:
every `{` that could start one sits inside a JSON string and is written as \\u007b.
"""

from __future__ import annotations

import re
from typing import cast

from allreduce_doctor.sanitize import one_line, terminal

from .layout import escape_each, fit
from .ticket import Ticket

JIRA_LIMIT = 32_767  # Jira's default limit for a text field (description, comment)
_ALWAYS = set("|{}[]*!")
_EFFECTS = set("_+^~-")
_PANEL_COLOURS = {"error": "#FFEBE6", "warning": "#FFFAE6", "note": "#EAE6FF", "info": "#DEEBFF", "success": "#E3FCEF"}
_CUT = "\n\n(cut to stay under Jira's 32,767-character limit)\n"


def _char(ch: str, prev: str, nxt: str) -> str:
    if ch == "\\":
        return "\uff3c"
    if ch in _ALWAYS:
        return "\\" + ch
    if ch in _EFFECTS and not (prev.isalnum() and nxt.isalnum()) and not (prev.isspace() and nxt.isspace()):
        return "\\" + ch  # could open or close -strike-, _em_, +ins+, ^sup^, ~sub~
    if ch == "?" and "?" in (prev, nxt):
        return "\\?"  # ??citation??
    return ch


def escape(text: str) -> str:
    """Text that renders as itself, on one line: a line break would let the next line start a
    heading (h1.), a quote (bq.) or a list; control characters are shown escaped."""
    return escape_each(one_line(text), _char)


# Block markers at the start of a line (atlassian-renderer: HeadingBlockRenderer `h[1-6]. `,
# BlockquoteBlockRenderer `bq. `, ListBlockRenderer `[*#-]+ `). `#` and `.` are not among its
# backslash-escapable characters (BackslashEscapeRendererComponent.ESCAPABLE_WIKI_CHARS), so a
# zero-width space goes before the marker: the text reads the same and starts no block.
_LINE_START = re.compile(r"^(h[1-6]\.|bq\.|#|-)", re.I)


def _guard(line: str) -> str:
    return _LINE_START.sub("\u200b\\1", line)


def _span(kind: str, text: str) -> str:
    text = one_line(text)
    lead, core, trail = cast(re.Match[str], re.match(r"^(\s*)(.*?)(\s*)$", text, re.S)).groups()  # matches any text
    if not core:
        return text
    core = escape(core)
    if kind == "strong":
        core = f"*{core}*"
    elif kind == "code":
        core = "{{" + core + "}}"
    return f"{lead}{core}{trail}"


def spans(items: list) -> str:
    return "".join(_span(kind, text) for kind, text in items)


def _cell(text: str) -> str:
    return text if text.strip() else " "


def _noformat(text: str) -> str:
    # Only `{` inside JSON strings can precede `noformat`; \u007b is the same character in JSON.
    return re.sub(r"\{(?=noformat)", r"\\u007b", text, flags=re.I)


def _block(block: tuple) -> str:
    kind = block[0]
    if kind == "heading":
        return f"h{block[1]}. {spans(block[2])}"
    if kind == "para":
        return _guard(spans(block[1]))
    if kind == "table":
        lines = ["||" + "||".join(_cell(escape(h)) for h in block[1]) + "||"]
        lines += ["|" + "|".join(_cell(spans(cell)) for cell in row) + "|" for row in block[2]]
        return "\n".join(lines)
    if kind == "bullets":
        return "\n".join(f"* {spans(item)}" for item in block[1])
    if kind == "numbered":
        return "\n".join(f"# {spans(item)}" for item in block[1])
    if kind == "panel":
        return f"{{panel:bgColor={_PANEL_COLOURS.get(block[1], '#DEEBFF')}}}\n{draw(block[2]).rstrip()}\n{{panel}}"
    if kind == "raw":
        return f"*{escape(block[1])}*\n{{noformat}}\n{_noformat(terminal(block[2]))}\n{{noformat}}"
    raise ValueError(f"unknown block {kind}")


def draw(blocks: list) -> str:
    return "\n\n".join(_block(b) for b in blocks) + "\n"


def render_jira(ticket: Ticket, limit: int = JIRA_LIMIT, intro: list | None = None) -> str:
    return fit(ticket, draw, limit, intro, _CUT)
