"""Checks for what a bundle's JSON holds: manifest.json, index.json, command records.

Every check raises BundleError with one line naming the bundle, the file, the field and what
to do. Absent optional fields get defaults (hand-written fixture bundles stay short); present
fields of the wrong type are refused, never coerced.
"""

from __future__ import annotations

import json

from allreduce_doctor.errors import BundleError
from allreduce_doctor.records import (
    FILE_DENIED,
    FILE_ERROR,
    FILE_MISSING,
    FILE_OK,
    CommandResult,
    HostIdentity,
    ProcessInfo,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, TypeGuard

FORMAT_NAME = "allreduce-doctor-bundle"
FORMAT_VERSION = 1
READ_STATUSES = (FILE_OK, FILE_MISSING, FILE_DENIED, FILE_ERROR)
_DAMAGED = "the bundle is damaged, collect it again"


def _number(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        float(value)
    except OverflowError:  # an integer too large for a float
        return False
    return True


def _int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _show(value: object) -> str:
    if isinstance(value, (dict, list)):
        return "an object" if isinstance(value, dict) else "a list"
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Checker:
    def __init__(self, label: str, name: str) -> None:
        self.label, self.name = label, name

    def bad(self, field: str, expected: str) -> BundleError:
        return BundleError(f"{self.label}: {self.name} field {field!r} must be {expected}; {_DAMAGED}")

    def obj(self, data: object) -> dict:
        if not isinstance(data, dict):
            raise BundleError(f"{self.label}: {self.name} is not a JSON object; {_DAMAGED}")
        return data

    def field(self, data: dict, key: str, test, expected: str, default: object) -> Any:  # `test` checked its type
        if key not in data:
            return default
        if not test(data[key]):
            raise self.bad(key, expected)
        return data[key]


# --- manifest.json -------------------------------------------------------------------------
def check_manifest(label: str, data: object) -> dict:
    c = _Checker(label, "manifest.json")
    data = c.obj(data)
    fmt = data.get("format")
    if fmt != FORMAT_NAME:
        shown = "missing" if fmt is None else _show(fmt)
        raise BundleError(
            f"{label}: manifest.json format is {shown}, expected {FORMAT_NAME!r}; "
            "this is not an allreduce-doctor bundle"
        )
    version = data.get("format_version")
    if not _int(version) or version < 1:
        shown = "missing" if version is None else _show(version)
        raise BundleError(
            f"{label}: manifest.json format_version is {shown}, not a version number; "
            f"this tool reads version {FORMAT_VERSION}"
        )
    if version > FORMAT_VERSION:
        raise BundleError(
            f"{label}: bundle format_version {version} is newer than this tool reads "
            f"(version {FORMAT_VERSION}); upgrade allreduce-doctor to read it"
        )
    text = lambda v: isinstance(v, str)  # noqa: E731
    host = c.field(data, "host", lambda v: isinstance(v, dict), "an object", {})
    samples = c.field(data, "samples", _samples_ok, 'a non-empty list of {"index": int, "time": number}', None)
    return {
        "format": fmt,
        "format_version": version,
        "tool_version": c.field(data, "tool_version", text, "a string", ""),
        "host": check_host(label, host),
        "created": c.field(data, "created", text, "a string", ""),
        "fabric": c.field(data, "fabric", text, "a string", ""),
        "probe_catalogue_hash": c.field(data, "probe_catalogue_hash", text, "a string", ""),
        "interval": float(c.field(data, "interval", _number, "a number", 0.0)),
        "samples": [{"index": s["index"], "time": float(s["time"])} for s in samples or [{"index": 0, "time": 0}]],
        "extra": c.field(data, "extra", lambda v: isinstance(v, dict), "an object", {}),
        # absent in bundles written before it: their index.json cannot be checked
        "index_crc32": c.field(data, "index_crc32", _crc, "a CRC-32 (an integer)", None),
    }


def _crc(value: object) -> bool:
    return _int(value) and 0 <= value < 1 << 32


def _samples_ok(value: object) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(s, dict) and _int(s.get("index")) and s["index"] >= 0 and _number(s.get("time")) for s in value)
    )


def check_host(label: str, data: dict) -> dict:
    c = _Checker(label, "manifest.json host")
    return HostIdentity(
        hostname=c.field(data, "hostname", lambda v: isinstance(v, str), "a string", ""),
        kernel=c.field(data, "kernel", lambda v: isinstance(v, str), "a string", ""),
        euid=c.field(data, "euid", lambda v: v is None or _int(v), "an integer or null", None),
        is_root=c.field(data, "is_root", lambda v: isinstance(v, bool), "true or false", False),
    ).to_dict()


# --- index.json ----------------------------------------------------------------------------
def check_index(label: str, data: object) -> dict:
    """The index, checked; a bundle without index.json has an empty one."""
    c = _Checker(label, "index.json")
    data = c.obj({} if data is None else data)
    reads = c.field(data, "reads", lambda v: _per_sample(v, _read_entry_ok), "an object of sample -> path -> "
                    '{"status": "missing"|"denied"|"error"|"ok", "reason": string}', {})
    globs = c.field(data, "globs", lambda v: _per_sample(v, _str_list), "an object of sample -> pattern -> [paths]", {})
    optional_str = lambda v: v is None or isinstance(v, str)  # noqa: E731
    links = c.field(data, "links", lambda v: _mapping(v, optional_str), "an object of path -> path or null", {})
    which = c.field(data, "which", lambda v: _mapping(v, optional_str), "an object of name -> path or null", {})
    exports = c.field(data, "exports", lambda v: _mapping(v, lambda m: _mapping(m, lambda x: x is None or _str_list(x))),
                      "an object of prefix -> path -> [symbols] or null", {})
    processes = c.field(data, "processes", lambda v: v is None or isinstance(v, list), "a list or null", None)
    if processes is not None:
        processes = [check_process(label, i, p).to_dict() for i, p in enumerate(processes)]
    # every member the recording wrote, with its CRC-32; None in bundles written before it
    members = c.field(data, "members", lambda v: _mapping(v, _crc), "an object of member -> CRC-32", None)
    return {"reads": reads, "globs": globs, "links": links, "which": which, "exports": exports, "processes": processes,
            "members": members}


def _mapping(value: object, test) -> bool:
    return isinstance(value, dict) and all(test(v) for v in value.values())


def _per_sample(value: object, test) -> bool:
    return isinstance(value, dict) and all(isinstance(v, dict) and _mapping(v, test) for v in value.values())


def _read_entry_ok(entry: object) -> bool:
    return (
        isinstance(entry, dict)
        and entry.get("status") in READ_STATUSES
        and isinstance(entry.get("reason", ""), str)
        and isinstance(entry.get("path", ""), str)
        and (entry.get("text") is None or isinstance(entry["text"], str))
    )


def check_process(label: str, position: int, data: object) -> ProcessInfo:
    c = _Checker(label, f"index.json processes[{position}]")
    data = c.obj(data)
    if not _int(data.get("pid")):
        raise c.bad("pid", "an integer")
    env = c.field(data, "env", lambda v: _mapping(v, lambda s: isinstance(s, str)), "an object of strings", {})
    return ProcessInfo(
        pid=data["pid"],
        name=c.field(data, "name", lambda v: isinstance(v, str), "a string", ""),
        cmdline=list(c.field(data, "cmdline", _str_list, "a list of strings", [])),
        env=dict(env),
        maps_nccl=c.field(data, "maps_nccl", lambda v: isinstance(v, bool), "true or false", False),
        env_readable=c.field(data, "env_readable", lambda v: isinstance(v, bool), "true or false", True),
        nccl_lib=c.field(data, "nccl_lib", lambda v: isinstance(v, str), "a string", ""),
        rdma_libs=list(c.field(data, "rdma_libs", _str_list, "a list of strings", [])),
        uid=c.field(data, "uid", lambda v: v is None or _int(v), "an integer or null", None),
        maps_cut=c.field(data, "maps_cut", lambda v: isinstance(v, str), "a string", ""),
        net_libs=c.field(data, "net_libs", lambda v: v is None or _str_list(v), "a list of strings or null", None),
    )


# --- commands/<key>.json -------------------------------------------------------------------
def check_command(label: str, name: str, data: object) -> CommandResult:
    c = _Checker(label, name)
    data = c.obj(data)
    text = lambda v: isinstance(v, str)  # noqa: E731
    return CommandResult(
        argv=list(c.field(data, "argv", _str_list, "a list of strings", [])),
        rc=c.field(data, "rc", lambda v: v is None or _int(v), "an integer or null", None),
        stdout=c.field(data, "stdout", text, "a string", ""),
        stderr=c.field(data, "stderr", text, "a string", ""),
        duration=float(c.field(data, "duration", _number, "a number", 0.0)),
        timed_out=c.field(data, "timed_out", lambda v: isinstance(v, bool), "true or false", False),
        error=c.field(data, "error", text, "a string", ""),
    )
