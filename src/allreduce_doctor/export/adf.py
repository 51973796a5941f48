"""Jira v3 Atlassian Document Format: the description (and comment) body of REST API v3.

Only the node types and attributes ADF allows are produced (tests/export/adf_schema.py checks it):
doc, heading(level), paragraph, text (marks strong and code), table/tableRow/tableHeader/
tableCell, codeBlock(language), panel(panelType), bulletList/orderedList/listItem. Values need no
markup escaping here (ADF text is data), only control characters shown escaped.
"""

from __future__ import annotations

import json
from typing import Any

from allreduce_doctor.sanitize import one_line, terminal

from .client import wire_json
from .jira_wiki import JIRA_LIMIT
from .layout import fit
from .ticket import Ticket

MARKS = {"strong": [{"type": "strong"}], "code": [{"type": "code"}]}


def _text(kind: str, text: str) -> dict:
    node: dict[str, Any] = {"type": "text", "text": one_line(text)}  # data, never markup; but one line, no raw ESC
    if kind in MARKS:
        node["marks"] = MARKS[kind]
    return node


def inline(items: list) -> list:
    """Text nodes for spans; ADF forbids empty text nodes, so an empty cell shows '-'."""
    nodes = [_text(kind, text) for kind, text in items if text]
    return nodes or [_text("text", "-")]


def _para(items: list) -> dict:
    return {"type": "paragraph", "content": inline(items)}


def _list(kind: str, items: list) -> dict:
    return {"type": kind, "content": [{"type": "listItem", "content": [_para(item)]} for item in items]}


def _table(header: list[str], rows: list) -> dict:
    def row(cells: list, cell_type: str) -> dict:
        return {"type": "tableRow", "content": [{"type": cell_type, "content": [_para(c)]} for c in cells]}

    return {"type": "table", "attrs": {"isNumberColumnEnabled": False, "layout": "default"},
            "content": [row([[("strong", h)] for h in header], "tableHeader")] + [row(r, "tableCell") for r in rows]}


def _nodes(block: tuple) -> list[dict]:
    kind = block[0]
    if kind == "heading":
        return [{"type": "heading", "attrs": {"level": block[1]}, "content": inline(block[2])}]
    if kind == "para":
        return [_para(block[1])]
    if kind == "table":
        return [_table(block[1], block[2])] if block[2] else []
    if kind == "bullets":
        return [_list("bulletList", block[1])] if block[1] else []
    if kind == "numbered":
        return [_list("orderedList", block[1])] if block[1] else []
    if kind == "panel":
        return [{"type": "panel", "attrs": {"panelType": block[1]}, "content": [n for b in block[2] for n in _nodes(b)]}]
    if kind == "raw":
        code = {"type": "codeBlock", "attrs": {"language": "json"}, "content": [{"type": "text", "text": terminal(block[2])}]}
        return [_para([("strong", block[1])]), code]
    raise ValueError(f"unknown block {kind}")


def document(blocks: list) -> dict:
    return {"version": 1, "type": "doc", "content": [n for b in blocks for n in _nodes(b)]}


def adf_document(ticket: Ticket, limit: int = JIRA_LIMIT, intro: list | None = None) -> dict:
    """The ADF doc, its JSON as sent (client.wire_json) kept under limit characters (a conservative
    reading of Jira's limit)."""
    text = fit(ticket, lambda blocks: wire_json(document(blocks)), limit, intro)
    return json.loads(text)


def render_adf(ticket: Ticket) -> str:
    """The document as JSON, one top-level block per line: compact, and still reviewable."""
    doc = adf_document(ticket)
    blocks = ",\n".join(json.dumps(node, ensure_ascii=False) for node in doc["content"])
    return f'{{"version": 1, "type": "doc", "content": [\n{blocks}\n]}}\n'
