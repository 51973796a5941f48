"""A small structural validator for the Atlassian Document Format subset the exporter may emit.

Which node types may hold which, which attributes each allows (and with what values), which text
marks exist: taken from the ADF structure reference (developer.atlassian.com, "Atlassian Document
Format: structure"), narrowed to the nodes the exporter is allowed to use.
"""

from __future__ import annotations

BLOCKS = {"paragraph", "heading", "table", "codeBlock", "panel", "bulletList", "orderedList", "rule"}
CHILDREN = {
    "doc": BLOCKS,
    "paragraph": {"text"},
    "heading": {"text"},
    "table": {"tableRow"},
    "tableRow": {"tableHeader", "tableCell"},
    "tableHeader": {"paragraph", "heading", "bulletList", "orderedList", "codeBlock", "panel", "rule"},
    "tableCell": {"paragraph", "heading", "bulletList", "orderedList", "codeBlock", "panel", "rule"},
    "codeBlock": {"text"},
    "panel": {"paragraph", "heading", "bulletList", "orderedList", "codeBlock", "rule"},
    "bulletList": {"listItem"},
    "orderedList": {"listItem"},
    "listItem": {"paragraph", "bulletList", "orderedList", "codeBlock"},
}
LEAVES = {"text", "rule"}
NON_EMPTY = {"table", "tableRow", "bulletList", "orderedList", "listItem", "panel", "tableHeader", "tableCell"}
PANEL_TYPES = {"info", "note", "warning", "error", "success"}
TABLE_LAYOUTS = {"default", "wide", "full-width", "center", "align-start", "align-end"}


def _int(lo: int, hi: int | None = None):
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)


# node type -> {attribute: (check, required)}
ATTRS = {
    "heading": {"level": (_int(1, 6), True)},
    "codeBlock": {"language": (lambda v: isinstance(v, str), False)},
    "panel": {"panelType": (lambda v: v in PANEL_TYPES, True)},
    "table": {"isNumberColumnEnabled": (lambda v: isinstance(v, bool), False),
              "layout": (lambda v: v in TABLE_LAYOUTS, False)},
    "orderedList": {"order": (_int(1), False)},
    "tableHeader": {"colspan": (_int(1), False), "rowspan": (_int(1), False),
                    "colwidth": (lambda v: isinstance(v, list), False), "background": (lambda v: isinstance(v, str), False)},
}
ATTRS["tableCell"] = ATTRS["tableHeader"]
MARKS = {"strong": {}, "em": {}, "code": {}, "link": {"href": True}}


def validate(doc) -> list[str]:
    """Every violation, as 'path: what'; an empty list for a valid document."""
    errors: list[str] = []
    if not isinstance(doc, dict) or doc.get("type") != "doc":
        return ["$: the root is not a doc node"]
    if doc.get("version") != 1:
        errors.append("$: doc.version must be 1")
    _node(doc, "$", None, errors)
    return errors


def _node(node, where: str, parent: str | None, errors: list[str]) -> None:
    if not isinstance(node, dict):
        errors.append(f"{where}: not an object")
        return
    kind = node.get("type")
    if kind not in CHILDREN and kind not in LEAVES:
        errors.append(f"{where}: node type {kind!r} is not allowed")
        return
    if parent is not None and kind not in CHILDREN[parent]:
        errors.append(f"{where}: {kind} may not be inside {parent}")
    allowed_keys = {"type", "attrs", "content", "text", "marks"} | ({"version"} if kind == "doc" else set())
    for key in set(node) - allowed_keys:
        errors.append(f"{where}: unknown key {key!r} on {kind}")
    _attrs(node, kind, where, errors)
    if kind == "text":
        _text(node, where, parent, errors)
        return
    if "text" in node or "marks" in node:
        errors.append(f"{where}: {kind} may not have text or marks")
    if kind in LEAVES:
        if "content" in node:
            errors.append(f"{where}: {kind} has no content")
        return
    content = node.get("content", [])
    if not isinstance(content, list):
        errors.append(f"{where}: content is not a list")
        return
    if kind in NON_EMPTY and not content:
        errors.append(f"{where}: {kind} may not be empty")
    if kind == "listItem" and content and content[0].get("type") != "paragraph":
        errors.append(f"{where}: a listItem starts with a paragraph")
    for i, child in enumerate(content):
        _node(child, f"{where}.content[{i}]", kind, errors)


def _attrs(node: dict, kind: str, where: str, errors: list[str]) -> None:
    spec = ATTRS.get(kind, {})
    attrs = node.get("attrs")
    if attrs is None:
        attrs = {}
    elif not isinstance(attrs, dict) or not spec:
        errors.append(f"{where}: {kind} takes no attrs" if not spec else f"{where}: attrs is not an object")
        return
    for name, (check, required) in spec.items():
        if name not in attrs:
            if required:
                errors.append(f"{where}: {kind} needs attrs.{name}")
        elif not check(attrs[name]):
            errors.append(f"{where}: {kind} attrs.{name}={attrs[name]!r} is not allowed")
    for name in set(attrs) - set(spec):
        errors.append(f"{where}: {kind} has no attribute {name!r}")


def _text(node: dict, where: str, parent: str | None, errors: list[str]) -> None:
    text = node.get("text")
    if not isinstance(text, str) or not text:
        errors.append(f"{where}: a text node needs non-empty text")
    marks = node.get("marks", [])
    if not isinstance(marks, list):
        errors.append(f"{where}: marks is not a list")
        return
    if marks and parent == "codeBlock":
        errors.append(f"{where}: text in a codeBlock may not have marks")
    types = []
    for j, mark in enumerate(marks):
        kind = mark.get("type") if isinstance(mark, dict) else None
        if kind not in MARKS:
            errors.append(f"{where}.marks[{j}]: mark {kind!r} is not allowed")
            continue
        types.append(kind)
        attrs = mark.get("attrs") or {}
        for name in MARKS[kind]:
            if not isinstance(attrs.get(name), str) or not attrs[name]:
                errors.append(f"{where}.marks[{j}]: {kind} needs attrs.{name}")
        for name in set(attrs) - set(MARKS[kind]):
            errors.append(f"{where}.marks[{j}]: {kind} has no attribute {name!r}")
    if len(types) != len(set(types)):
        errors.append(f"{where}: a mark appears twice")
    if "code" in types and set(types) - {"code", "link"}:
        errors.append(f"{where}: the code mark combines only with link")
