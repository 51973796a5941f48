"""Read and check a diagnosis file: anything that is not what `diagnose --format json` writes
gets one clear line (DiagnosisFileError), never a traceback further down in a renderer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.status import VERDICTS

# The diagnosis JSON carries `format_version` once it changes shape; without it, it is version 1.
DIAGNOSIS_VERSION = 1
EXPECTED = "expected what `allreduce-doctor diagnose --format json` writes"
MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 64
# the text fields of each record (null allowed): the ticket builds names and labels from them
TEXT_FIELDS = {
    "path": ("node", "kind", "title", "outcome", "means"),
    "evidence": ("node", "fact", "expected", "source", "status", "reason"),
    "findings": ("cause", "title", "severity", "owner", "node"),
    "remediation": ("step", "owner"),
    "inconclusive": ("node", "reason"),
    "unanswered": ("node", "reason"),
    "root_cause": ("id", "title", "severity", "owner", "summary", "node"),
    "healthy": ("id", "title", "summary", "node"),
    "context": ("host", "kernel", "source", "fabric", "tool_version", "probe_catalogue", "runbook_hash", "bundle"),
}
RECORD_LISTS = ("path", "evidence", "findings", "remediation", "inconclusive", "unanswered")
# Lists inside a record that the renderers iterate: each record's list and what its items are.
NESTED_LISTS: dict[str, dict[str, type]] = {"path": {"facts": dict}, "findings": {"supporting": str, "contradicting": str}}
TEXT_LISTS = ("verification", "runbooks")


class DiagnosisFileError(DoctorError):
    """The input of `export` is not a diagnosis this tool reads."""


def _kind(value) -> str:
    if isinstance(value, bool):
        return "true/false"
    return {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number",
            type(None): "null"}.get(type(value), type(value).__name__)


def read_diagnosis(path: str) -> dict:
    """The checked diagnosis dict in a file (`-` reads stdin)."""
    label = "stdin" if path == "-" else path
    if path == "-":
        raw = sys.stdin.buffer.read(MAX_BYTES + 1)
    else:
        p = Path(path)
        if not p.exists():
            raise DiagnosisFileError(f"{path}: no such file")
        if not p.is_file():
            raise DiagnosisFileError(f"{path}: not a file; {EXPECTED}")
        try:
            with p.open("rb") as fh:
                raw = fh.read(MAX_BYTES + 1)
        except OSError as err:
            raise DiagnosisFileError(f"{path}: cannot read: {err.strerror or err}") from None
    if len(raw) > MAX_BYTES:
        raise DiagnosisFileError(f"{label}: larger than {MAX_BYTES // (1024 * 1024)} MiB; {EXPECTED}")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise DiagnosisFileError(f"{label}: not UTF-8 text; {EXPECTED}") from None
    except json.JSONDecodeError as err:
        raise DiagnosisFileError(f"{label}: not JSON (line {err.lineno}, column {err.colno}: {err.msg}); {EXPECTED}") from None
    except RecursionError:
        raise DiagnosisFileError(f"{label}: nested too deeply to be a diagnosis; {EXPECTED}") from None
    return check_diagnosis(data, label)


def _depth(value) -> int:
    """The nesting depth, without recursion (a hostile file must not blow the stack)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            return depth
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children)
    return deepest


def check_diagnosis(data, label: str = "diagnosis") -> dict:
    """`data` itself when it is a diagnosis of a version this tool reads; else DiagnosisFileError."""
    def bad(why: str) -> DiagnosisFileError:
        return DiagnosisFileError(f"{label}: not a diagnosis ({why}); {EXPECTED}")

    if not isinstance(data, dict):
        raise bad(f"the top level is {_kind(data)}, not an object")
    _check_version(data, label)
    if "verdict" not in data:
        raise bad('it has no "verdict"')
    if data["verdict"] not in VERDICTS:
        raise bad(f"verdict {json.dumps(data['verdict'])[:60]} is not fault, healthy or inconclusive")
    for key, kind in (("path", list), ("evidence", list), ("context", dict)):
        if not isinstance(data.get(key), kind):
            raise bad(f'"{key}" is {_kind(data.get(key)) if key in data else "missing"}, expected {_kind(kind())}')
    for key in RECORD_LISTS + TEXT_LISTS:
        items = data.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            raise bad(f'"{key}" is {_kind(items)}, expected a list')
        want = str if key in TEXT_LISTS else dict
        for i, item in enumerate(items):
            if not isinstance(item, want):
                raise bad(f"{key}[{i}] is {_kind(item)}, expected {_kind(want())}")
            _check_text(item, key, f"{key}[{i}]", bad)
            _check_nested(item, key, f"{key}[{i}]", bad)
    for key in ("root_cause", "healthy"):
        if data.get(key) is not None and not isinstance(data[key], dict):
            raise bad(f'"{key}" is {_kind(data[key])}, expected an object or null')
        _check_text(data.get(key), key, key, bad)
    _check_text(data["context"], "context", "context", bad)
    steps = (data.get("healthy") or {}).get("next_steps")
    if steps is not None and (not isinstance(steps, list) or not all(isinstance(x, str) for x in steps)):
        raise bad("healthy.next_steps is not a list of strings")
    if data["verdict"] == "fault" and not isinstance((data.get("root_cause") or {}).get("id"), str):
        raise bad('verdict is "fault" but root_cause has no "id"')
    if data.get("fleet") is not None:
        _check_fleet(data["fleet"], bad)
    if _depth(data) > MAX_DEPTH:
        raise bad(f"nested deeper than {MAX_DEPTH} levels")
    return data


def _check_text(record, kind: str, where: str, bad) -> None:
    if not isinstance(record, dict):
        return
    for name in TEXT_FIELDS.get(kind, ()):
        value = record.get(name)
        if value is not None and not isinstance(value, str):
            raise bad(f"{where}.{name} is {_kind(value)}, expected a string")


def _check_nested(record, kind: str, where: str, bad) -> None:
    if not isinstance(record, dict):
        return
    for name, want in NESTED_LISTS.get(kind, {}).items():
        items = record.get(name)
        if items is None:
            continue
        if not isinstance(items, list):
            raise bad(f"{where}.{name} is {_kind(items)}, expected a list")
        for i, item in enumerate(items):
            if not isinstance(item, want):
                raise bad(f"{where}.{name}[{i}] is {_kind(item)}, expected {_kind(want())}")


def _check_version(data: dict, label: str) -> None:
    version = data.get("format_version", DIAGNOSIS_VERSION)
    if isinstance(version, bool) or not isinstance(version, int):
        raise DiagnosisFileError(f"{label}: diagnosis format_version {json.dumps(version)[:40]} is not a version number; "
                                 f"this tool reads version {DIAGNOSIS_VERSION}")
    if version > DIAGNOSIS_VERSION:
        raise DiagnosisFileError(f"{label}: diagnosis format_version {version} is newer than this tool reads "
                                 f"(version {DIAGNOSIS_VERSION}); upgrade allreduce-doctor to export it")
    if version < DIAGNOSIS_VERSION:
        raise DiagnosisFileError(f"{label}: diagnosis format_version {version} is older than this tool reads "
                                 f"(version {DIAGNOSIS_VERSION}); diagnose again with this version")


def _check_fleet(fleet, bad) -> None:
    """The fleet comparison's shape: {nodes_checked, nodes_affected: [..], settings: [{key, majority, odd}]}."""
    if not isinstance(fleet, dict):
        raise bad(f'"fleet" is {_kind(fleet)}, expected an object')
    checked = fleet.get("nodes_checked", 0)
    if isinstance(checked, bool) or not isinstance(checked, int) or checked < 0:
        raise bad(f"fleet.nodes_checked is {_kind(checked)}, expected a count")
    affected = fleet.get("nodes_affected", [])
    if not isinstance(affected, list) or not all(isinstance(n, str) for n in affected):
        raise bad("fleet.nodes_affected is not a list of node names")
    settings = fleet.get("settings", [])
    if not isinstance(settings, list):
        raise bad(f"fleet.settings is {_kind(settings)}, expected a list")
    for i, row in enumerate(settings):
        if not isinstance(row, dict) or not isinstance(row.get("key"), str):
            raise bad(f'fleet.settings[{i}] is not an object with a "key"')
        if not isinstance(row.get("odd", {}), dict):
            raise bad(f"fleet.settings[{i}].odd is {_kind(row['odd'])}, expected an object (node -> value)")
