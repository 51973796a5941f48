"""One-line renderings of deciding values, shared by the reports, the ticket exporters and the TUI."""

from __future__ import annotations

import json
import re
from typing import Any

from allreduce_doctor.status import READ_STATUS, STEP_FAIL, STEP_PASS, STEP_UNKNOWN

MAX_VALUE = 160


# Item attributes that identify rather than decide; left out of compact renderings.
IDENTITY_KEYS = {"device", "port", "fw_ver", "hca_type", "pci_bdf", "netdev", "link_layer", "value",
                 "lid", "sm_lid", "source"}
# The attributes that decide a check, shown first so a cut line still names them: the port's rate
# and its peers', the GID index with its GID, type and netdev, the priority with PFC and ECN.
DECIDING_FIRST = ("rate_gbps", "expected_gbps", "width", "expected_width", "degraded", "state", "pinned", "index",
                  "gid", "kind", "type", "ndev", "ndev_note", "addr_range", "range_matched", "recommended_index",
                  "priority", "tc", "dscp", "trust",
                  "pfc_on_priority", "ecn_on_priority", "measured", "expected", "ratio")


def _label(item: dict) -> str:
    """What a record is called: its name, else the device or netdev it describes."""
    return str(next((item[k] for k in ("name", "netdev", "device", "file") if item.get(k)), "?"))


def _fields(item: dict, decides: tuple[str, ...] = (), only: bool = False) -> str:
    """The record's attributes as key=value, nulls and nested detail left out: first the ones the check
    reads (`decides`, kept even when null: a null decides too), then DECIDING_FIRST, then the rest
    (only: the check's own attributes alone)."""
    order = {k: i for i, k in enumerate((*decides, *(k for k in DECIDING_FIRST if k not in decides)))}
    parts = []
    for key in sorted(item, key=lambda k: order.get(k, len(order))):
        value = item[key]
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            value = value["name"]  # a state {code, name}: its name
        if key in decides and not isinstance(value, (dict, list)):
            parts.append(f"{key}={json.dumps(value, default=str)}")
            continue
        if only or key in IDENTITY_KEYS or key == "name" or key.startswith("_") or value is None \
                or isinstance(value, (dict, list)):
            continue
        parts.append(f"{key}={json.dumps(value, default=str)}")
    return " ".join(parts)


def _names(key: str, items: list) -> str:
    names = [_label(i) for i in items]
    listed = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return f"{key}{': ' if key else ''}{len(names)} checked ({listed})"


def _records(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(i, dict) for i in value)


def _compact(value, collection: bool = False, decides: tuple[str, ...] = (), only: bool = False):
    """Witness records become 'name: key=value ...'; whole collections become their names."""
    if isinstance(value, dict) and len(value) == 1:
        (key, inner), = value.items()
        if _records(inner):
            return _names(key, inner)
    if collection and _records(value):
        return _names("", value)
    if isinstance(value, list) and value and all(isinstance(i, dict) for i in value):
        parts = []
        for item in value[:4]:
            parts.append(f"{_label(item)}: {_fields(item, decides, only)}")
        more = f" (+{len(value) - 4} more)" if len(value) > 4 else ""
        return "; ".join(parts) + more
    return value


def short(value, limit: int = MAX_VALUE, collection: bool = False, decides=()) -> str:
    """A one-line rendering of a deciding value (collection: the value is a whole fact). `decides`: the
    record attributes the check reads (Step.decides); they come first and are never cut: a line too long
    keeps them whole and cuts only the rest."""
    if value is None:
        return "-"
    decides = tuple(decides or ())
    text = _one(_compact(value, collection, decides))
    if len(text) <= limit:
        return text
    cut = text[: limit - 3] + "..."
    if decides and _records(value) and not collection:
        deciding = [f for item in value[:4] if (f := _fields(item, decides, only=True))]
        if deciding and not all(f in cut for f in deciding):
            return _one(_compact(value, collection, decides, only=True)) + " ..."
    return cut


def _one(value) -> str:
    return " ".join((value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)).split())


def observed_text(row: dict, witnesses: dict, limit: int = MAX_VALUE) -> str:
    """An evidence row's observed value on one line. The row of a failed check whose fact holds the
    records that failed it shows those records (the port and its rate, the GID with its type and
    netdev), not the names of every record checked; `witnesses` maps a check to its deciding value."""
    held: Any = witnesses.get(row.get("node"))
    observed = row.get("observed")
    if _records(held) and isinstance(observed, list) and all(w in observed for w in held):
        return short(held, limit)
    return short(observed, limit, collection=True)


def step_badge(step: dict, deciding: set[str]) -> str:
    """The step's outcome for the node (pass / fail / unknown / n.a.); a finding's step fails."""
    if step.get("node") in deciding:
        return STEP_FAIL
    if step.get("badge"):
        return step["badge"]
    return STEP_UNKNOWN if step.get("outcome") == "unknown" else STEP_PASS  # a Diagnosis from before badges


def read_status(status) -> str:
    """An evidence row's read status, worded apart from any verdict."""
    return READ_STATUS.get(str(status), str(status or "-"))


# How the catalogue's texts point at a deciding value (runbooks/catalogue/causes.yaml: "see the deciding
# value" where the leaf's deciding step shows the specifics). Where a report shows none, the pointer goes.
_DECIDING_REF = re.compile(
    r"\s*\((?:see )?(?:[\w.]+ in )?the deciding value\)"  # " (see the deciding value)", " (x in the deciding value)"
    r"|(?<=\()see the deciding value[;:]\s*"  # "(see the deciding value: the Xid codes; ...)" -> "(the Xid codes; ...)"
    r"|[;,:]\s*see the deciding value(?=\))"  # "(AER, see the deciding value)" -> "(AER)"
    r"|,?\s*or [\w.]+ in the deciding value"  # "(show_gids, or recommended_index in the deciding value; ...)"
    r"|The deciding value says why when the evidence shows it(?= \()")


def unreferenced(text: str) -> str:
    """`text` without its pointers at a deciding value: for a report that shows none."""
    return _DECIDING_REF.sub(lambda m: "The evidence may say why" if m.group(0).startswith("The") else "", str(text))


def deciding_finding(d: dict) -> dict | None:
    """The root cause's own finding when it holds a deciding value (what its texts' "see the deciding
    value" points at), else None: then no report may point at one."""
    rc = d.get("root_cause") or {}
    return next((f for f in d.get("findings") or [] if rc.get("id") and f.get("cause") == rc["id"]
                 and f.get("value") not in (None, "", [], {})), None)


def value_lines(value, decides=(), limit: int = 8) -> list[str]:
    """A deciding value in full: one line per record (`name: key=value ...`, the check's keys first) or per
    fact it used (`fact: value`), never cut inside a line; up to `limit` lines, then how many more."""
    decides = tuple(decides or ())
    if _records(value):
        lines = [f"{_label(item)}: {_fields(item, decides)}" for item in value]
    elif isinstance(value, dict) and value:
        lines = [f"{key}: {_one(_compact(inner, decides=decides))}" for key, inner in value.items()]
    else:
        lines = [_one(value)]
    return lines[:limit] + ([f"(+{len(lines) - limit} more)"] if len(lines) > limit else [])
