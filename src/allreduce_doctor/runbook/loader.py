"""Load runbook YAML into the model, with exact locations in every error.

Every error is a RunbookError whose message is one line:
    FILE:LINE:COL: MESSAGE (at YAML.PATH)[ did you mean 'x'?]
(YAML syntax errors, which have no path yet, end after the message.)
Schema: see the module constants below and runbooks/README.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import RunbookError
from ..status import HEALTHY, NOT_APPLICABLE
from ..suggest import closest
from ..yamlsrc import YMap, YNode, YScalar, parse_yaml, position_in_scalar, read_source
from . import causes
from .cond_lexer import ExprError
from .conditions import compile_condition
from .fields import known_keys as _known_keys
from .fields import mapping as _mapping
from .fields import one_of as _one_of
from .fields import require as _require
from .fields import text as _text
from .fields import text_list as _text_list
from .model import CauseLeaf, Check, HealthyLeaf, Location, Node, Outcome, Question, Rejoin, Runbook, RunbookSet

TOP_REQUIRED = ("runbook", "title", "entry", "nodes")
TOP_OPTIONAL = ("description", "detour", "rejoin")
REJOIN_KEYS = ("at", "until")
KIND_KEYS = ("check", "ask", "cause", "healthy")
NODE_SCHEMA: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {  # kind key -> (required, optional)
    "check": (("title", "why", "check", "yes", "no", "unknown"), ("expected",)),
    "ask": (("title", "why", "ask", "answer", "choices", "unknown"), ()),
    "cause": (("cause",), ()),
    # A healthy leaf may say what its own path adds; otherwise the catalogue's words stand.
    # `verdict: not_applicable`: the leaf ends where nothing of NCCL's networking exists to judge.
    "healthy": (("healthy",), ("summary", "next_steps", "verdict")),
}
CATALOGUE_TEXT_KEYS = ("severity", "owner", "summary", "remediation", "verification")
NODE_KEYS = tuple(dict.fromkeys([*(k for req, opt in NODE_SCHEMA.values() for k in (*req, *opt)), *CATALOGUE_TEXT_KEYS]))
OUTCOME_KEYS = ("next", "means")
_KIND_NAMES = {"check": "check", "ask": "question", "cause": "cause", "healthy": "healthy"}
_ID = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_ID_RULE = "use letters, digits and '_', starting with a letter"


def load_runbooks(paths: Iterable[Path], known_facts: Iterable[str], root: str | None = None) -> RunbookSet:
    """Load and validate several runbook files as one set; `root` is the runbook walked first."""
    from .graph import build_set

    facts = frozenset(known_facts)
    runbooks: list[Runbook] = []
    for path in paths:
        runbooks.append(parse_runbook(read_source(path, RunbookError), str(path), facts))
    return build_set(runbooks, root)


def load_runbook_text(text: str, filename: str, known_facts: Iterable[str]) -> RunbookSet:
    """One runbook from text, validated as a set of its own (it is its own root)."""
    from .graph import build_set

    return build_set([parse_runbook(text, filename, frozenset(known_facts))], None)


def parse_runbook(text: str, filename: str, known_facts: Iterable[str]) -> Runbook:
    """Parse and check one runbook file (schema, conditions, local entry); no cross-file checks."""
    doc = parse_yaml(text, filename, RunbookError)
    if doc is None:
        raise Location(filename, 1, 1, "<document>", RunbookError).error("expected a mapping, got an empty document")
    return _Reader(text, frozenset(known_facts)).runbook(doc)


class _Reader:
    def __init__(self, source: str, known_facts: frozenset[str]):
        self.source = source
        self.facts = known_facts

    def runbook(self, doc: YNode) -> Runbook:
        top = _mapping(doc)
        if not set(top.entries) & set(TOP_REQUIRED):  # not a runbook at all: quote none of its text
            keys = ", ".join(f"'{k}'" for k in TOP_REQUIRED[:-1]) + f" and '{TOP_REQUIRED[-1]}'"
            raise top.loc.error(f"not a runbook: expected a mapping with {keys}")
        _known_keys(top, (*TOP_REQUIRED, *TOP_OPTIONAL))
        _require(top, TOP_REQUIRED)
        rb_id = _ident(top, "runbook", "runbook id")
        entry = _ident(top, "entry", "entry")
        nodes_map = _mapping(top.entries["nodes"][1])
        if not nodes_map.entries:
            raise nodes_map.loc.error("'nodes' must not be empty")
        nodes: dict[str, Node] = {}
        for node_id, (key, value) in nodes_map.entries.items():
            if not _ID.match(node_id):
                raise key.loc.error(f"invalid node id '{node_id}': {_ID_RULE}")
            nodes[node_id] = self.node(rb_id, node_id, key.loc, value)
        if entry not in nodes:
            where = top.entries["entry"][1].loc
            raise where.error(f"entry '{entry}' is not a node of runbook '{rb_id}'", closest(entry, nodes))
        return Runbook(
            id=rb_id,
            title=_text(top, "title"),
            entry=entry,
            nodes=nodes,
            file=top.loc.file,
            loc=top.entries["runbook"][1].loc,
            entry_loc=top.entries["entry"][1].loc,
            description=_text(top, "description") if "description" in top.entries else "",
            detour="detour" in top.entries and _one_of(top, "detour", ("true", "false")) == "true",
            rejoin=_rejoin(top) if "rejoin" in top.entries else None,
        )

    def node(self, rb_id: str, node_id: str, where: Location, value: YNode) -> Node:
        ymap = _mapping(value)
        _known_keys(ymap, NODE_KEYS)
        kinds = [k for k in KIND_KEYS if k in ymap.entries]
        if not kinds:
            raise where.error(f"node '{node_id}' needs one of 'check', 'ask', 'cause' or 'healthy'")
        if len(kinds) > 1:
            raise ymap.entries[kinds[1]][0].loc.error(
                f"node '{node_id}' has both '{kinds[0]}' and '{kinds[1]}'; use exactly one of 'check', 'ask', 'cause' or 'healthy'"
            )
        kind = kinds[0]
        required, optional = NODE_SCHEMA[kind]
        for key, (kscalar, _) in ymap.entries.items():
            if kind == "cause" and key in CATALOGUE_TEXT_KEYS:
                raise kscalar.loc.error(f"cause texts live in the catalogue (runbooks/{causes.CATALOGUE_FILE}); remove '{key}' here")
            if key not in required and key not in optional:
                raise kscalar.loc.error(f"'{key}' does not belong in a {_KIND_NAMES[kind]} node")
        _require(ymap, required)
        common: dict[str, Any] = dict(id=node_id, runbook=rb_id, loc=where)
        if kind == "check":
            return Check(
                **common, title=_text(ymap, "title"), why=_text(ymap, "why"), check=_text(ymap, "check"),
                condition=self.condition(ymap), expected=_text(ymap, "expected") if "expected" in ymap.entries else "",
                outcomes={label: _outcome(ymap, label) for label in ("yes", "no", "unknown")},
            )
        if kind == "ask":
            return Question(
                **common, title=_text(ymap, "title"), why=_text(ymap, "why"), ask=_text(ymap, "ask"),
                answer=_ident(ymap, "answer", "answer name"), outcomes=_choices(ymap),
            )
        if kind == "cause":
            return CauseLeaf(**common, cause=_cause_id(ymap, "cause"))
        healthy = _cause_id(ymap, "healthy")
        return HealthyLeaf(**common, healthy=healthy, own_summary=_own_text(ymap, healthy, "summary"),
                           own_next_steps=_own_text(ymap, healthy, "next_steps"), verdict=_leaf_verdict(ymap))

    def condition(self, ymap: YMap):
        scalar = ymap.entries["check"][1]
        assert isinstance(scalar, YScalar)  # _text() checked it
        try:
            return compile_condition(scalar.text, self.facts)
        except ExprError as exc:
            offset = min(exc.pos, len(scalar.text.rstrip()))
            spot = position_in_scalar(self.source, scalar, offset)
            where = scalar.loc.moved(*spot) if spot else scalar.loc
            raise where.error(f"bad condition: {exc.detail}", exc.suggestion) from None


# -- field readers (the generic ones are in fields.py) ----------------------------------------
def _ident(ymap: YMap, key: str, what: str) -> str:
    value = _text(ymap, key)
    if not _ID.match(value):
        raise ymap.entries[key][1].loc.error(f"invalid {what} '{value}': {_ID_RULE}")
    return value


def _cause_id(ymap: YMap, key: str) -> str:
    value = _text(ymap, key)
    where = ymap.entries[key][1].loc
    info = causes.CAUSES.get(value)
    want_healthy = key == "healthy"
    if info is None:
        pool = [c for c, i in causes.CAUSES.items() if i.healthy == want_healthy]
        raise where.error(f"unknown {'healthy outcome' if want_healthy else 'cause'} '{value}'", closest(value, pool))
    if info.healthy and not want_healthy:
        raise where.error(f"'{value}' is a healthy outcome, not a cause; use 'healthy: {value}'")
    if want_healthy and not info.healthy:
        raise where.error(f"'{value}' is a cause, not a healthy outcome; use 'cause: {value}'")
    return value


def _leaf_verdict(ymap: YMap) -> str:
    """A healthy leaf's verdict: healthy, or not_applicable when it says so."""
    if "verdict" not in ymap.entries:
        return HEALTHY
    value = _text(ymap, "verdict")
    if value not in (HEALTHY, NOT_APPLICABLE):
        raise ymap.entries["verdict"][1].loc.error(
            f"verdict '{value}' of a healthy leaf: use '{HEALTHY}' or '{NOT_APPLICABLE}'", closest(value, [HEALTHY, NOT_APPLICABLE]))
    return value


def _own_text(ymap: YMap, healthy: str, key: str):
    """A healthy leaf's own summary (text) or next_steps (list), "" / [] when it keeps the catalogue's."""
    if key not in ymap.entries:
        return "" if key == "summary" else []
    own: Any = _text(ymap, key) if key == "summary" else _text_list(ymap, key)
    written = getattr(causes.CAUSES[healthy], key)
    if (" ".join(own.split()) == " ".join(written.split())) if key == "summary" else tuple(own) == written:
        raise ymap.entries[key][0].loc.error(
            f"repeats the catalogue's {key} of '{healthy}' (runbooks/{causes.CATALOGUE_FILE}); remove '{key}' here")
    return own


def _rejoin(top: YMap) -> Rejoin:
    """`rejoin: {at: RUNBOOK.NODE, until: RUNBOOK.NODE}`; the targets are checked across files (graph.py)."""
    rmap = _mapping(top.entries["rejoin"][1])
    _known_keys(rmap, REJOIN_KEYS)
    _require(rmap, REJOIN_KEYS)
    for key in REJOIN_KEYS:
        value = _text(rmap, key)
        if value.count(".") != 1 or not all(_ID.match(part) for part in value.split(".")):
            raise rmap.entries[key][1].loc.error(f"rejoin '{key}' must name a node of another runbook as RUNBOOK.NODE, got '{value}'")
    return Rejoin(_text(rmap, "at"), _text(rmap, "until"), top.entries["rejoin"][0].loc)


def _outcome(ymap: YMap, label: str) -> Outcome:
    omap = _mapping(ymap.entries[label][1])
    _known_keys(omap, OUTCOME_KEYS)
    _require(omap, OUTCOME_KEYS)
    target = _text(omap, "next")
    return Outcome(label, target, _text(omap, "means"), omap.entries["next"][1].loc)


def _choices(ymap: YMap) -> dict[str, Outcome]:
    cmap = _mapping(ymap.entries["choices"][1])
    if not cmap.entries:
        raise cmap.loc.error("'choices' must not be empty")
    out: dict[str, Outcome] = {}
    for name, (kscalar, _) in cmap.entries.items():
        if name == "unknown":
            raise kscalar.loc.error("choice 'unknown' is reserved; put the 'unknown' outcome beside 'choices'")
        if not _ID.match(name):
            raise kscalar.loc.error(f"invalid choice '{name}': {_ID_RULE}")
        out[name] = _outcome(cmap, name)
    out["unknown"] = _outcome(ymap, "unknown")
    return out
