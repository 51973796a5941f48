"""The cause catalogue (runbooks/catalogue/causes.yaml): every cause's texts, written once.

Each id of the public list (docs/causes.md) has one entry: title, section, severity, owner, summary,
remediation and verification; the two "no fault" outcomes (`healthy: true`) have a summary and
next steps instead. Runbook leaves name an id and take their texts from here.

A cause may also say how it shows to a reporter (`shows`: some of hang, slow, crash, error), whether
it only matters between hosts (`between_hosts: true`: no job on one host can hit it) and the one paste
that decides it (`paste`). The ranked differential of pasted text (evidence/rank.py) and the candidate
tables (signatures/candidates.yaml, report_words.yaml: a row without next_step takes `paste`) read
them here, so each is written once.

`CAUSES`, `FAULT_IDS` and `HEALTHY_IDS` are read on first use and kept for the process, so
`--help` and `--version` never parse YAML. The ids are a public contract (JSON output, ticket
labels): add freely, never rename or drop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import RunbookError
from ..symptoms import SYMPTOMS
from ..yamlsrc import Location

SEVERITIES = ("critical", "major", "minor")
OWNERS = ("host", "network", "platform")

if TYPE_CHECKING:
    from ..yamlsrc import YMap

CATALOGUE_FILE = "catalogue/causes.yaml"  # under the runbooks data folder
FAULT_KEYS = ("title", "section", "severity", "owner", "summary", "remediation", "verification")
HEALTHY_KEYS = ("title", "section", "healthy", "summary", "next_steps")
OPTIONAL_KEYS = ("shows", "between_hosts", "paste")  # faults only: how it shows, its scope, its deciding paste
_ID = re.compile(r"[a-z][a-z0-9_]*\Z")


@dataclass(frozen=True)
class CauseInfo:
    id: str
    title: str  # "what is wrong", one line
    section: str  # the docs/causes.md section heading, short form
    healthy: bool = False
    severity: str = ""  # faults only
    owner: str = ""
    summary: str = ""
    remediation: tuple[str, ...] = ()
    verification: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()  # healthy outcomes only
    shows: tuple[str, ...] = ()  # the symptoms it usually gives (symptoms.SYMPTOMS); () when none is typical
    between_hosts: bool = False  # only ranks on two hosts can hit it (a job on one host never does)
    paste: str = ""  # the one paste or command that decides it; "" when the catalogue names none


def catalogue_path() -> Path:
    from ..resources import data_dir

    return data_dir("runbooks") / CATALOGUE_FILE


_SHIPPED: dict[str, CauseInfo] = {}  # the shipped catalogue when the Doctor's knowledge cache gave it


def use_shipped(catalogue: dict[str, CauseInfo]) -> None:
    """Take the shipped catalogue from the knowledge cache (checked there) instead of parsing it."""
    _SHIPPED.update(catalogue)


@cache
def load_catalogue(path: Path | None = None) -> dict[str, CauseInfo]:
    """The catalogue at `path` (the shipped one by default), parsed once per process."""
    from .fields import read_text

    if path is None and _SHIPPED:
        return _SHIPPED
    path = path or catalogue_path()
    return parse_catalogue(read_text(path), str(path))


def parse_catalogue(text: str, filename: str) -> dict[str, CauseInfo]:
    # YAML is imported here, not at the top: importing this module must stay cheap (--help).
    from ..yamlsrc import parse_yaml
    from . import fields

    doc = parse_yaml(text, filename, RunbookError)
    if doc is None:
        raise Location(filename, 1, 1, "<document>", RunbookError).error("expected a mapping of cause ids, got an empty document")
    top = fields.mapping(doc)
    out: dict[str, CauseInfo] = {}
    for cause_id, (key, value) in top.entries.items():
        if not _ID.match(cause_id):
            raise key.loc.error(f"invalid cause id '{cause_id}': use lowercase letters, digits and '_', starting with a letter")
        out[cause_id] = _entry(cause_id, fields.mapping(value))
    return out


def _entry(cause_id: str, ymap: YMap) -> CauseInfo:
    from . import fields

    healthy = "healthy" in ymap.entries
    if healthy and fields.text(ymap, "healthy") != "true":
        raise ymap.entries["healthy"][1].loc.error("'healthy' must be true (leave it out for a cause)")
    allowed = HEALTHY_KEYS if healthy else FAULT_KEYS
    for key, (kscalar, _) in ymap.entries.items():
        if key in FAULT_KEYS + HEALTHY_KEYS + OPTIONAL_KEYS and key not in allowed + (() if healthy else OPTIONAL_KEYS):
            kind = "a healthy outcome" if healthy else "a cause (only healthy outcomes have it)"
            raise kscalar.loc.error(f"'{key}' does not belong in {kind}")
    fields.known_keys(ymap, allowed + (() if healthy else OPTIONAL_KEYS))
    fields.require(ymap, allowed)
    common: dict[str, Any] = dict(id=cause_id, title=fields.text(ymap, "title"), section=fields.text(ymap, "section"),
                  summary=fields.text(ymap, "summary"))
    if healthy:
        return CauseInfo(**common, healthy=True, next_steps=tuple(fields.text_list(ymap, "next_steps")))
    return CauseInfo(
        **common, severity=fields.one_of(ymap, "severity", SEVERITIES), owner=fields.one_of(ymap, "owner", OWNERS),
        remediation=tuple(fields.text_list(ymap, "remediation")), verification=tuple(fields.text_list(ymap, "verification")),
        **_attributes(ymap),
    )


def _attributes(ymap: YMap) -> dict:
    """The optional attributes of a fault: `shows` (a list of symptoms, each once), `between_hosts`
    (true or false) and `paste` (text)."""
    from . import fields

    out: dict = {}
    if "shows" in ymap.entries:
        shows = fields.text_list(ymap, "shows")
        node = ymap.entries["shows"][1]
        for name in shows:
            if name not in SYMPTOMS:
                raise node.loc.error(f"shows: each is one of {', '.join(SYMPTOMS)}, got '{name}'")
        if len(set(shows)) != len(shows):
            raise node.loc.error("shows: name each symptom once")
        out["shows"] = tuple(shows)
    if "between_hosts" in ymap.entries:
        out["between_hosts"] = fields.one_of(ymap, "between_hosts", ("true", "false")) == "true"
    if "paste" in ymap.entries:
        out["paste"] = fields.text(ymap, "paste")
    return out


@cache
def _ids(healthy: bool) -> frozenset[str]:
    return frozenset(c for c, info in load_catalogue().items() if info.healthy == healthy)


def __getattr__(name: str):
    """CAUSES, FAULT_IDS, HEALTHY_IDS: computed from the shipped catalogue on first use."""
    if name == "CAUSES":
        return load_catalogue()
    if name in ("FAULT_IDS", "HEALTHY_IDS"):
        return _ids(healthy=name == "HEALTHY_IDS")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
