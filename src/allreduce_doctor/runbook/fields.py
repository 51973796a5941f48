"""Typed readers over located YAML (yamlsrc): each error is one located RunbookError line.

Shared by the runbook loader and the cause catalogue, so both files word their errors alike.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import RunbookError
from ..suggest import closest
from ..yamlsrc import YMap, YNode, YScalar, YSeq, describe, read_source


def read_text(path: Path) -> str:
    """A runbook or catalogue file's text, through the one size-checked YAML reader."""
    return read_source(path, RunbookError)


def mapping(node: YNode) -> YMap:
    if not isinstance(node, YMap):
        raise node.loc.error(f"expected a mapping, got {describe(node)}")
    return node


def known_keys(ymap: YMap, allowed: tuple[str, ...]) -> None:
    for key, (kscalar, _) in ymap.entries.items():
        if key not in allowed:
            raise kscalar.loc.error(f"unknown key '{key}'", closest(key, allowed))


def require(ymap: YMap, keys: tuple[str, ...]) -> None:
    for key in keys:
        if key not in ymap.entries:
            raise ymap.key_loc.error(f"missing required key '{key}'")


def scalar_text(node: YNode, key: str) -> str:
    if not isinstance(node, YScalar) or node.is_null:
        quote = " (quote text that contains ': ')" if isinstance(node, YMap) and len(node.entries) == 1 else ""
        raise node.loc.error(f"'{key}' must be text, got {describe(node)}{quote}")
    text = node.text.strip()
    if not text:
        raise node.loc.error(f"'{key}' must not be empty")
    return text


def text(ymap: YMap, key: str) -> str:
    return scalar_text(ymap.entries[key][1], key)


def text_list(ymap: YMap, key: str) -> list[str]:
    node = ymap.entries[key][1]
    if not isinstance(node, YSeq):
        raise node.loc.error(f"'{key}' must be a list of text, got {describe(node)}")
    if not node.items:
        raise node.loc.error(f"'{key}' must not be empty")
    return [scalar_text(item, key) for item in node.items]


def one_of(ymap: YMap, key: str, allowed: tuple[str, ...]) -> str:
    value = text(ymap, key)
    if value not in allowed:
        raise ymap.entries[key][1].loc.error(f"{key} must be one of {', '.join(allowed)}, got '{value}'", closest(value, allowed))
    return value
