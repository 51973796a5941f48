"""The signature table (signatures/signatures.yaml): what a log line means, as data.

A row names a `kind` of happening (what a line says, never why), the pattern that recognizes
it, whether the job fails on it, and the primary source its wording was read from. The
candidate causes of each kind (signatures/candidates.yaml) say why it can happen. Both files
are read once, through the one YAML-with-locations loader, and checked: a bad row is one
FILE:LINE error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.evidence.needles import required_words
from allreduce_doctor.resources import data_dir
from allreduce_doctor.yamlsrc import parse_yaml, plain, read_source

ROW_KEYS = {"kind", "match", "says", "blocking", "source", "examples"}
SOURCE_KEYS = {"repo", "path", "versions"}
CANDIDATE_KEYS = {"cause", "next_step", "basis", "symptoms", "between_hosts"}
SYMPTOMS = ("hang", "slow", "crash", "error")
NEEDLES = "required_words"  # the cached file's key for its rows' required words (not a key of the YAML file)


class SignatureError(DoctorError):
    """A malformed signature or candidate row (FILE:LINE: what is wrong)."""


class LazyPattern:
    """A row's regular expression, compiled when a line first reaches it: compiling all 140-odd rows costs
    about 19 ms, a tenth of a small paste's run, and most lines reach few rows (their required words).
    A file parsed now is compiled at once, so a bad pattern is one FILE:LINE error; the knowledge cache
    holds only files whose patterns compiled."""

    __slots__ = ("pattern", "flags", "_compiled")

    def __init__(self, pattern: str, flags: int = re.IGNORECASE) -> None:
        self.pattern, self.flags = pattern, flags
        self._compiled: re.Pattern | None = None

    def compile(self) -> re.Pattern:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def search(self, text: str, *span):
        return self.compile().search(text, *span)

    def __eq__(self, other: object) -> bool:  # the same expression, compiled or not
        return isinstance(other, LazyPattern) and (self.pattern, self.flags) == (other.pattern, other.flags)

    def __hash__(self) -> int:
        return hash((self.pattern, self.flags))


@dataclass(frozen=True)
class Signature:
    kind: str
    pattern: LazyPattern
    says: str
    blocking: bool
    source: dict
    examples: tuple[str, ...]
    words: tuple[str, ...] = ()  # one of them is in every line the pattern matches (needles.py); () for none


@dataclass(frozen=True)
class Candidate:
    cause: str
    next_step: str
    basis: str
    symptoms: tuple[str, ...] = ()
    between_hosts: bool = False  # this kind points at the cause only when the ranks span hosts


def load_table(name: str):
    """(path, the file's plain data, whether it was parsed now): from the knowledge cache when the file and the code are
    unchanged (parsing both files with locations is a tenth of a small evidence run), else parsed."""
    from allreduce_doctor import knowledge_cache

    path = data_dir("signatures") / name
    cached = _cache_file(name)
    try:
        key = knowledge_cache.cache_key([path])
        return path, knowledge_cache.read(key, path=cached), False
    except (knowledge_cache.CacheMiss, OSError):
        return path, plain(parse_yaml(read_source(path, SignatureError), str(path), SignatureError)), True


def _cache_file(name: str) -> Path | None:
    from allreduce_doctor import knowledge_cache

    folder = knowledge_cache.cache_dir()
    return folder / f"signatures-{name.removesuffix('.yaml')}.json" if folder is not None else None


def remember_table(path: Path, data) -> None:
    """Cache a file's plain data once its rows are checked (a bad file is never cached: its
    errors keep their lines)."""
    from allreduce_doctor import knowledge_cache

    try:
        knowledge_cache.write(knowledge_cache.cache_key([path]), data, path=_cache_file(path.name))
    except OSError:
        pass


def row_error(path: Path, node, message: str) -> SignatureError:
    return SignatureError(f"{path}:{getattr(node, 'line', 0)}: {message}")


@lru_cache(maxsize=1)
def signatures() -> tuple[Signature, ...]:
    """The rows of signatures.yaml, in order (the first that matches names a line)."""
    path, data, parsed = load_table("signatures.yaml")
    rows = (data or {}).get("signatures") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not rows:
        raise row_error(path, data, "expected a top-level 'signatures:' list")
    # The rows' required words travel with the cached file (needles.py parses each pattern: about 11 ms).
    needles = data.get(NEEDLES) if not parsed else None
    if not (isinstance(needles, list) and len(needles) == len(rows)):
        needles = [list(required_words(str(row.get("match", "")), re.IGNORECASE)) if isinstance(row, dict) else []
                   for row in rows]
    out = []
    for row, words in zip(rows, needles):
        if not isinstance(row, dict) or set(row) != ROW_KEYS:
            raise row_error(path, row, f"a signature row has exactly the keys {', '.join(sorted(ROW_KEYS))}")
        source = row["source"]
        if not isinstance(source, dict) or set(source) != SOURCE_KEYS or not source["versions"]:
            raise row_error(path, row, f"signature '{row['kind']}': source needs repo, path and versions")
        if not isinstance(row["examples"], list) or not row["examples"]:
            raise row_error(path, row, f"signature '{row['kind']}': at least one example line")
        pattern = LazyPattern(str(row["match"]))
        if parsed:
            try:
                pattern.compile()
            except re.error as exc:
                raise row_error(path, row, f"signature '{row['kind']}': bad pattern: {exc}") from None
        out.append(Signature(str(row["kind"]), pattern, str(row["says"]), bool(row["blocking"]),
                             dict(source), tuple(str(e) for e in row["examples"]), tuple(words)))
    if parsed:
        remember_table(path, dict(data, **{NEEDLES: needles}))
    return tuple(out)


@lru_cache(maxsize=1)
def candidates() -> dict[str, tuple[Candidate, ...]]:
    """kind -> its candidate causes, most likely first (candidates.yaml)."""
    path, data, parsed = load_table("candidates.yaml")
    table = (data or {}).get("candidates") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise row_error(path, data, "expected a top-level 'candidates:' mapping")
    kinds = {s.kind for s in signatures()}
    out = {}
    for kind, rows in table.items():
        if kind not in kinds:
            raise row_error(path, rows, f"candidates for '{kind}', which is no signature kind")
        entries = []
        for row in rows or []:
            if not isinstance(row, dict) or not {"cause", "basis"} <= set(row) <= CANDIDATE_KEYS:
                raise row_error(path, row, f"'{kind}': a candidate has cause, basis (and next_step, symptoms, between_hosts)")
            symptoms = tuple(row.get("symptoms") or ())
            if set(symptoms) - set(SYMPTOMS):
                raise row_error(path, row, f"'{kind}': symptoms are among {', '.join(SYMPTOMS)}")
            step = next_step(row, path, f"'{kind}'")
            entries.append(Candidate(str(row["cause"]), step, str(row["basis"]), symptoms,
                                     row.get("between_hosts") is True))
        out[kind] = tuple(entries)
    if parsed:
        remember_table(path, data)
    return out


def next_step(row: dict, path: Path, what: str) -> str:
    """A candidate row's next step: its own `next_step` (what this kind adds to the paste), else the
    catalogue's `paste` of its cause (runbooks/catalogue/causes.yaml), the one place that paste is written."""
    from allreduce_doctor.runbook.causes import CAUSES

    if "next_step" in row:
        return str(row["next_step"])
    info = CAUSES.get(str(row["cause"]))
    if info is None or not info.paste:
        raise row_error(path, row, f"{what}: a candidate without next_step needs its cause's `paste` in the catalogue")
    return info.paste


def by_kind() -> dict[str, Signature]:
    return {s.kind: s for s in signatures()}


def match(text: str) -> Signature | None:
    """The first signature whose pattern is found in `text`, else None."""
    return _MATCHER.match(signatures(), text)


class _Matcher:
    """Row by row, first match wins. Rows whose required words (needles.py, read with the table) a line
    lacks are not searched, nor compiled: 4 us a line instead of 35 over the table."""

    def __init__(self) -> None:
        self.lines = 0

    def match(self, rows: tuple[Signature, ...], text: str) -> Signature | None:
        self.lines += 1
        if not text.isascii():  # the words are ASCII and lowered: a non-ASCII line searches every row
            return next((sig for sig in rows if sig.pattern.search(text)), None)
        lowered = text.lower()
        for sig in rows:  # plain loops: a generator per row costs more than the test
            words = sig.words
            for word in words:
                if word in lowered:
                    break
            else:
                if words:
                    continue
            if sig.pattern.search(text):
                return sig
        return None


_MATCHER = _Matcher()
