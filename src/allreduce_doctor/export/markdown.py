"""GitHub-flavoured Markdown: the GitHub issue body, and the same document with its title.

Values are escaped so that nothing in them is markup: no table breaks on `|`, no HTML from `<`,
no @mention or #123 cross-reference pinging people from a value. Long raw evidence is folded into
<details>; the body stays within GitHub's 65,536 characters.
"""

from __future__ import annotations

import html
import re
from typing import cast

from allreduce_doctor.sanitize import one_line, terminal

from .layout import escape_each, fit
from .ticket import Ticket

GITHUB_LIMIT = 65_536
ALERTS = {"error": "CAUTION", "warning": "WARNING", "note": "NOTE", "info": "NOTE", "success": "TIP"}
_ALWAYS = set("\\`*[]<>|~&@")
_CUT = "\n\n(cut to stay under GitHub's 65,536-character limit)\n"


def _char(ch: str, prev: str, nxt: str) -> str:
    # an underscore inside a word (port_xmit_wait) is never emphasis: leave it readable
    if ch in _ALWAYS or (ch == "_" and not (prev.isalnum() and nxt.isalnum())) or (ch == "#" and nxt.isdigit()):
        return "\\" + ch
    return ch


def escape(text: str) -> str:
    """Text that renders as itself, on one line: control characters and line breaks shown escaped
    (a line break would end the paragraph, table row or list item), then punctuation with markup
    meaning backslash-escaped (GFM)."""
    return escape_each(one_line(text), _char)


def _fence(text: str, char: str = "`", least: int = 1) -> str:
    runs = [len(m) for m in re.findall(re.escape(char) + "+", text)]
    return char * max(least, max(runs, default=0) + 1)


def _span(kind: str, text: str, in_table: bool) -> str:
    text = one_line(text)  # code spans too: they are parsed after the blocks, which a line break ends
    if kind == "code":
        body = text.replace("|", "\\|") if in_table else text
        if not body:
            return "-"
        fence = _fence(text)
        pad = " " if body.startswith("`") or body.endswith("`") else ""
        return f"{fence}{pad}{body}{pad}{fence}"
    lead, core, trail = cast(re.Match[str], re.match(r"^(\s*)(.*?)(\s*)$", text, re.S)).groups()  # matches any text
    core = escape(core)
    if kind == "strong" and core:
        core = f"**{core}**"
    return f"{lead}{core}{trail}"


def spans(items: list, in_table: bool = False) -> str:
    return "".join(_span(kind, text, in_table) for kind, text in items)


def _guard(line: str) -> str:
    """A paragraph or list item whose text would start a heading, list, quote or rule: escape it."""
    if line[:1] in ("#", "-", "+", ">", "="):
        return "\\" + line
    return re.sub(r"^(\d+)([.)])", r"\1\\\2", line)


def _table(header: list[str], rows: list) -> str:
    lines = ["| " + " | ".join(escape(h) or " " for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(spans(cell, True) or " " for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _block(block: tuple) -> str:
    kind = block[0]
    if kind == "heading":
        return "#" * block[1] + " " + spans(block[2])
    if kind == "para":
        return _guard(spans(block[1]))
    if kind == "table":
        return _table(block[1], block[2])
    if kind == "bullets":
        return "\n".join(f"- {_guard(spans(item))}" for item in block[1])
    if kind == "numbered":
        return "\n".join(f"{i}. {_guard(spans(item))}" for i, item in enumerate(block[1], 1))
    if kind == "panel":
        inner = draw(block[2]).rstrip("\n").split("\n")
        return "\n".join([f"> [!{ALERTS.get(block[1], 'NOTE')}]"] + [f"> {line}".rstrip() for line in inner])
    if kind == "raw":
        raw = terminal(block[2])  # JSON with C1 or bidi controls escaped: the same JSON, shown safely
        fence = _fence(raw, least=3)
        return (f"<details><summary>{html.escape(one_line(block[1]))}</summary>\n\n{fence}json\n{raw}\n{fence}\n\n</details>")
    raise ValueError(f"unknown block {kind}")


def draw(blocks: list) -> str:
    return "\n\n".join(_block(b) for b in blocks) + "\n"


def render_github(ticket: Ticket, limit: int = GITHUB_LIMIT, intro: list | None = None) -> str:
    """The issue body (the title goes to the API or `gh issue create --title`); intro: leading spans."""
    head = f"<!-- allreduce-doctor fingerprint: {ticket.fingerprint} -->\n"
    return fit(ticket, lambda blocks: head + draw(blocks), limit, intro, _CUT)


def render_markdown(ticket: Ticket) -> str:
    """A standalone document: the title as a heading, then the issue body."""
    title = f"# {escape(ticket.title)}\n\n"
    return title + render_github(ticket, GITHUB_LIMIT - len(title))
