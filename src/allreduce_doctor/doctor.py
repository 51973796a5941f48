"""The Doctor: the knowledge loaded and checked once per process.

The probe catalogue (probes/*.yaml), the runbooks (runbooks/*.yaml, checked as a graph) and the
runbook hash every diagnosis names. Every front end gets it from `Doctor.load()`; the fleet and
the terminal UI then run many Sessions through the same Doctor. `load_catalogue()` is the probe
catalogue alone: collecting a node (also on fleet nodes, where networkx is not installed) needs
no runbooks.

The shipped knowledge is checked once per change, not once per run: `Doctor.load()` reads it from
the knowledge cache (knowledge_cache.py) when the files are unchanged, so networkx is imported only
by validation (a cache miss, `runbook validate`, a user's own runbook files).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from allreduce_doctor.probes.spec import Catalogue
from allreduce_doctor.resources import probe_files, runbook_files

if TYPE_CHECKING:
    from allreduce_doctor.runbook.model import RunbookSet

ROOT_RUNBOOK = "trunk"  # the shipped set's first runbook; its branches are picked by fabric
BRANCHES = {"ib": "ib", "roce": "roce"}  # node fabric -> the runbook that checks it


_loaded: dict[str, Catalogue] = {}  # "catalogue": the shipped one, once per process


def load_catalogue() -> Catalogue:
    """The shipped probe catalogue, loaded and cross-checked once (or taken from the Doctor's cache)."""
    if "catalogue" not in _loaded:
        from allreduce_doctor.probes.spec import load_catalogue as load

        _loaded["catalogue"] = load(probe_files())
    return _loaded["catalogue"]


def files_hash(paths: list[Path]) -> str:
    """The 16-hex-digit sha256 prefix a diagnosis names its runbooks by."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class Doctor:
    catalogue: Catalogue
    runbooks: RunbookSet
    runbook_hash: str

    @classmethod
    def load(cls, validate: bool = False) -> Doctor:
        """The shipped knowledge: from the knowledge cache when its files are unchanged, else
        loaded and checked (and cached). `validate` always does the full load and checks."""
        if validate:
            return _shipped_checked()
        return _shipped()

    @classmethod
    def from_runbook_files(cls, paths: list[Path]) -> Doctor:
        """A user's own runbook files, checked against the shipped probe catalogue (each file
        may be a set of its own: the first one loaded is the root)."""
        from allreduce_doctor.runbook.loader import load_runbooks

        catalogue = load_catalogue()
        return cls(catalogue, load_runbooks(paths, catalogue.facts(), root=None), files_hash(paths))

    def facts_for(self, fabric: str | None) -> set[str]:
        """Facts read by the trunk and by the branch of this fabric (both branches if unknown)."""
        ids = {ROOT_RUNBOOK} | ({BRANCHES[fabric]} if fabric in BRANCHES else set(BRANCHES.values()))
        facts = set().union(*(self.runbooks.runbooks[i].facts for i in ids if i in self.runbooks.runbooks))
        # A derived fact another runbook reads (nccl_log's job.ceiling, from the pasted table and the answers) is
        # derived too: a derivation reads only what was observed, it touches nothing on the node.
        probes = self.catalogue.by_fact()
        others = set(BRANCHES.values()) - ids  # the other fabric's branch stays out
        read = set().union(*(rb.facts for i, rb in self.runbooks.runbooks.items() if i not in others))
        return facts | {f for f in read if f in probes and probes[f].kind == "derive"}


def _knowledge_files() -> list[Path]:
    from allreduce_doctor.runbook.causes import catalogue_path

    return [*probe_files(), *runbook_files(), catalogue_path()]


@lru_cache(maxsize=1)
def _shipped() -> Doctor:
    from allreduce_doctor import knowledge_cache
    from allreduce_doctor.runbook import causes

    try:
        key = knowledge_cache.cache_key(_knowledge_files())
    except OSError:  # a data file unreadable: the full load names it
        return _shipped_checked()
    try:
        stored = knowledge_cache.read(key, extra=(Doctor,))
        doctor, cause_catalogue = stored["doctor"], stored["causes"]
        if not isinstance(doctor, Doctor) or not isinstance(doctor.catalogue, Catalogue):
            raise knowledge_cache.CacheMiss("not a Doctor")
    except (knowledge_cache.CacheMiss, TypeError, KeyError):
        doctor = _shipped_checked()
        knowledge_cache.write(key, {"doctor": doctor, "causes": causes.load_catalogue()})
        return doctor
    causes.use_shipped(cause_catalogue)
    known = _loaded.setdefault("catalogue", doctor.catalogue)
    if known is not doctor.catalogue and known.digest == doctor.catalogue.digest:
        # the catalogue was loaded on its own first (a probe command): one copy per process, and a
        # user's runbooks (from_runbook_files) check against the very catalogue the Doctor holds
        doctor = replace(doctor, catalogue=known)
    return doctor


@lru_cache(maxsize=1)
def _shipped_checked() -> Doctor:
    """The full load: parse every file, check the runbook graph (networkx)."""
    from allreduce_doctor.runbook.causes import catalogue_path
    from allreduce_doctor.runbook.loader import load_runbooks

    catalogue = load_catalogue()
    paths = runbook_files()
    # The cause texts are part of the knowledge too: a changed fix text is a new hash.
    return Doctor(catalogue, load_runbooks(paths, catalogue.facts(), root=ROOT_RUNBOOK),
                  files_hash([*paths, catalogue_path()]))
