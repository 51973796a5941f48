"""The rows of signatures/report_words.yaml, loaded once and checked (evidence/report_words.py reads with them)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from allreduce_doctor.domain import BUSBW_ABOVE_REASONS
from allreduce_doctor.evidence import signatures
from allreduce_doctor.evidence.signatures import SYMPTOMS, load_table, remember_table, row_error

SCALES = ("one_works", "one_node", "multi_node")
_NEEDS = {"container"}
_CANDIDATE_KEYS = {"cause", "next_step", "basis", "needs", "against"}
_LAUNCHER_FLAGS = ("nodes", "hosts", "hostfile", "one_node")
_ABOVE_NOTES = (set(BUSBW_ABOVE_REASONS) - {"tree_two_nodes"}) | {"tree_more_nodes"}  # tree_two_nodes: busbw_note's


@dataclass(frozen=True)
class WordCandidate:
    cause: str
    next_step: str
    basis: str
    needs: str | None = None
    against: bool = True  # whether a setting that did not help speaks against it (a tried row's candidates)


@dataclass(frozen=True)
class Situation:
    id: str
    says: str
    symptoms: tuple[str, ...]
    scale: tuple[str, ...]
    unless: tuple[str, ...]  # scales that rule the situation out (a hang on one node that works on one node)
    pattern: re.Pattern | None
    candidates: tuple[WordCandidate, ...]


@dataclass(frozen=True)
class Tried:
    var: str
    values: tuple[str, ...]  # the values that switch something off (any value when empty)
    words: re.Pattern | None
    candidates: tuple[WordCandidate, ...]
    against: bool


@dataclass(frozen=True)
class Launcher:
    name: str
    command: re.Pattern  # the line starts the launcher (after a prompt and VAR=value assignments)
    nodes: re.Pattern | None  # a flag whose number is the node count (of MIN:MAX or MIN-MAX, the MIN)
    hosts: re.Pattern | None  # a flag listing the hosts (host:slots,...)
    hostfile: re.Pattern | None  # a flag naming a file of hosts
    one_node: re.Pattern | None  # a flag that runs the job on one node


@dataclass(frozen=True)
class Table:
    topic: re.Pattern
    symptoms: tuple[tuple[str, re.Pattern], ...]
    trouble: re.Pattern
    not_helped: re.Pattern
    helped: re.Pattern
    scale: tuple[tuple[str, re.Pattern], ...]
    container: re.Pattern
    busbw_words: re.Pattern
    busbw_above: re.Pattern
    busbw_note: str
    busbw_above_notes: dict[str, str]  # domain.busbw_above_reason -> what the Diagnosis says of a table's busbw
    situations: tuple[Situation, ...]
    tried: tuple[Tried, ...]
    launchers: tuple[Launcher, ...]


@lru_cache(maxsize=1)
def table() -> Table:
    """The rows of report_words.yaml, checked (a bad row is one FILE: error)."""
    path, data, parsed = load_table("report_words.yaml")
    if not isinstance(data, dict):
        raise row_error(path, data, "expected a mapping with topic, symptoms, outcomes, scale, situations, tried")

    def rx(value, what: str) -> re.Pattern:
        try:
            return re.compile(str(value), re.IGNORECASE)
        except re.error as exc:
            raise row_error(path, data, f"{what}: bad pattern: {exc}") from None

    def cands(rows, what: str) -> tuple[WordCandidate, ...]:
        out = []
        for row in rows or []:
            if not isinstance(row, dict) or not {"cause", "basis"} <= set(row) <= _CANDIDATE_KEYS \
                    or row.get("needs", "container") not in _NEEDS:
                raise row_error(path, row, f"{what}: a candidate has cause, basis (and next_step, needs: container)")
            out.append(WordCandidate(str(row["cause"]), signatures.next_step(row, path, what), str(row["basis"]),
                                     row.get("needs"),
                                     bool(row.get("against", True))))
        return tuple(out)

    try:
        symptoms = tuple((name, rx(data["symptoms"][name], f"symptoms.{name}")) for name in data["symptoms"])
        if set(dict(symptoms)) != set(SYMPTOMS):
            raise row_error(path, data, f"symptoms: exactly {', '.join(SYMPTOMS)}")
        situations = []
        for sid, row in data["situations"].items():
            when = row.get("when") or {}
            for key, known in (("symptoms", SYMPTOMS), ("scale", SCALES), ("unless", SCALES)):
                if set(when.get(key) or ()) - set(known):  # a misspelt name would never match: say so
                    raise row_error(path, row, f"situations.{sid}: {key}: each is one of {', '.join(known)}")
            kind = row.get("kind")
            found = signatures.candidates().get(kind, ()) if kind else ()
            if kind and not found:
                raise row_error(path, row, f"situations.{sid}: kind '{kind}' has no candidates in candidates.yaml")
            reused = tuple(WordCandidate(c.cause, c.next_step, c.basis) for c in found)
            situations.append(Situation(str(sid), str(row["says"]), tuple(when.get("symptoms") or ()),
                                        tuple(when.get("scale") or ()), tuple(when.get("unless") or ()),
                                        rx(row["match"], f"situations.{sid}") if "match" in row else None,
                                        reused + cands(row.get("candidates"), f"situations.{sid}")))
        tried = tuple(Tried(str(row["var"]), tuple(str(v) for v in row.get("values") or ()),
                            rx(row["words"], f"tried.{row['var']}") if "words" in row else None,
                            cands(row["candidates"], f"tried.{row['var']}"), bool(row.get("against", True)))
                      for row in data["tried"])
        above = {str(k): str(v) for k, v in data["busbw_above_notes"].items()}
        if set(above) != _ABOVE_NOTES:
            raise row_error(path, data, f"busbw_above_notes: exactly {', '.join(sorted(_ABOVE_NOTES))}")
        above["tree_two_nodes"] = str(data["busbw_note"]) + above.pop("tree_more_nodes")
        out = Table(rx(data["topic"], "topic"), symptoms, rx(data["trouble"], "trouble"),
                    rx(data["outcomes"]["not_helped"], "outcomes.not_helped"),
                    rx(data["outcomes"]["helped"], "outcomes.helped"),
                    tuple((name, rx(data["scale"][name], f"scale.{name}")) for name in SCALES),
                    rx(data["container"], "container"), rx(data["busbw_words"], "busbw_words"),
                    rx(data["busbw_above"], "busbw_above"), str(data["busbw_note"]), above, tuple(situations), tried,
                    tuple(_launcher(row, rx) for row in data["launchers"]))
    except (KeyError, TypeError, AttributeError) as exc:
        raise row_error(path, data, f"a row lacks a key or has the wrong shape ({exc})") from None
    if parsed:
        remember_table(path, data)
    return out


def _launcher(row: dict, rx) -> Launcher:
    name = str(row["name"])
    if not {"name", "command", "basis"} <= set(row) <= {"name", "command", "basis", *_LAUNCHER_FLAGS}:
        raise KeyError(f"launchers.{name}: name, command, basis and some of {', '.join(_LAUNCHER_FLAGS)}")
    return Launcher(name, rx(row["command"], f"launchers.{name}.command"),
                    *(rx(row[f], f"launchers.{name}.{f}") if f in row else None for f in _LAUNCHER_FLAGS))
