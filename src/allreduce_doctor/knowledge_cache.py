"""The Doctor's compiled knowledge as plain JSON in the user's cache dir: load once, check once.

Parsing the probe catalogue, the runbooks (conditions compiled) and the cause catalogue, and
checking the runbook graph with networkx, is two thirds of a diagnosis's CPU; its answer only
changes when those files (or this code) change. So the checked result is written as JSON,
keyed by a hash of every data file, the package version and the package's code,
in $XDG_CACHE_HOME/allreduce-doctor (default ~/.cache/allreduce-doctor).

The file is a header line {"key", "sha256"} and the payload. A cache whose key differs (stale),
whose payload does not hash to the header (tampered, truncated) or that does not decode into
the known classes is never used: the caller does the full load and writes a new one. Decoding
builds only the whitelisted dataclasses (_classes) from their fields: no pickle, no eval, no
import by name. Any failure to read or write is silent: the cache only ever saves time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

SCHEMA = 1  # bump when the encoding itself changes
FILE_NAME = "knowledge.json"
PACKAGE_DIR = Path(__file__).resolve().parent


class CacheMiss(Exception):
    """The cache cannot be used (absent, stale, tampered, undecodable); the caller loads fully."""


def cache_dir() -> Path | None:
    """$XDG_CACHE_HOME/allreduce-doctor, else ~/.cache/allreduce-doctor; None when neither is an
    absolute path (the XDG spec ignores a relative one; no home: nowhere to cache)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "allreduce-doctor" if os.path.isabs(base) else None


def _default_file() -> Path | None:
    folder = cache_dir()
    return folder / FILE_NAME if folder is not None else None


def cache_key(data_files: list[Path]) -> str:
    """sha256 over the version, the data files' names and bytes, and the code's names and bytes."""
    from allreduce_doctor import __version__

    digest = hashlib.sha256(f"schema {SCHEMA} version {__version__} code {_code_digest()}\n".encode())
    for path in data_files:
        digest.update(f"{Path(path).name}\0".encode())
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


@lru_cache(maxsize=1)
def _code_digest() -> str:
    """The package's code (names and bytes): a checkout's code changes without a version bump, and
    the classes and registries are code. Bytes, not mtimes: a copy, a checkout or a file system that
    re-stamps files must not turn every run into a miss. Once per process (1.2 MB, about 2 ms):
    the Doctor and both signature files are keyed by it."""
    digest = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(PACKAGE_DIR)):
        dirs.sort()
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            digest.update(f"{os.path.relpath(path, PACKAGE_DIR)}\0".encode())
            with open(path, "rb") as code:
                digest.update(code.read())
    return digest.hexdigest()


# -- encoding: tagged JSON, dataclasses by whitelisted name --------------------------------------
def _classes(extra: tuple[type, ...]) -> dict[str, type]:
    from allreduce_doctor import errors
    from allreduce_doctor.probes import spec
    from allreduce_doctor.runbook import causes, cond_ast, conditions, model
    from allreduce_doctor.yamlsrc import Location

    found: dict[str, type] = {"Location": Location, "Condition": conditions.Condition, "CauseInfo": causes.CauseInfo,
                              **{cls.__name__: cls for cls in extra}}
    for module in (model, cond_ast, spec):
        found.update({name: obj for name, obj in vars(module).items()
                      if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == module.__name__})
    found.update({name: obj for name, obj in vars(errors).items()
                  if isinstance(obj, type) and issubclass(obj, errors.DoctorError)})
    return found


SKIPPED = {"RunbookSet": {"built_graph"}}  # rebuilt on demand (networkx), never stored


def encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, tuple):
        return {"@t": [encode(v) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"@s": sorted(encode(v) for v in value)}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("only str keys are cached")
        return {"@m": {k: encode(v) for k, v in value.items()}}
    if isinstance(value, type):
        return {"@c": value.__name__}
    if dataclasses.is_dataclass(value):
        name = type(value).__name__
        skip = SKIPPED.get(name, set())
        return {"@": name, "f": {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)
                                 if f.name not in skip}}
    raise TypeError(f"cannot cache a {type(value).__name__}")


def decode(value: Any, classes: dict[str, type]) -> Any:
    if isinstance(value, list):
        return [decode(v, classes) for v in value]
    if not isinstance(value, dict):
        return value
    if "@" in value:
        cls = classes.get(value["@"])
        if cls is None or not dataclasses.is_dataclass(cls):
            raise CacheMiss(f"unknown class {value['@']!r}")
        return cls(**{k: decode(v, classes) for k, v in value["f"].items()})
    if "@m" in value:
        return {k: decode(v, classes) for k, v in value["@m"].items()}
    if "@t" in value:
        return tuple(decode(v, classes) for v in value["@t"])
    if "@s" in value:
        return frozenset(decode(v, classes) for v in value["@s"])
    if "@c" in value:
        cls = classes.get(value["@c"])
        if cls is None or dataclasses.is_dataclass(cls):
            raise CacheMiss(f"unknown class {value['@c']!r}")
        return cls
    raise CacheMiss("untagged mapping")


# -- the file ---------------------------------------------------------------------------------------
def read(key: str, extra: tuple[type, ...] = (), path: Path | None = None) -> Any:
    """The decoded payload stored under `key` (the whitelisted dataclasses and `extra`); CacheMiss
    when it cannot be trusted."""
    path = path or _default_file()
    if path is None:
        raise CacheMiss("no cache dir")
    try:
        raw = path.read_bytes()
        header_line, _, payload = raw.partition(b"\n")
        header = json.loads(header_line)
        if header.get("key") != key:
            raise CacheMiss("stale")
        if header.get("sha256") != hashlib.sha256(payload).hexdigest():
            raise CacheMiss("tampered")
        return decode(json.loads(payload), _classes(extra))
    except CacheMiss:
        raise
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as err:
        raise CacheMiss(f"unreadable: {err}") from None


def write(key: str, value: Any, path: Path | None = None) -> bool:
    """Store `value` under `key` (atomically); False when the cache dir is not writable."""
    import tempfile  # here: a hit never writes, and tempfile is a costly import

    path = path or _default_file()
    if path is None:
        return False
    try:
        payload = json.dumps(encode(value), separators=(",", ":")).encode()
        header = json.dumps({"key": key, "sha256": hashlib.sha256(payload).hexdigest()}).encode()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".knowledge-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(header + b"\n" + payload)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return True
    except (OSError, TypeError, ValueError):
        return False
