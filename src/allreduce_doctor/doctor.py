"""The Doctor: the knowledge loaded and checked once per process.

The probe catalogue (probes/*.yaml), the runbooks (runbooks/*.yaml, checked as a graph) and the
runbook hash every diagnosis names. Every front end gets it from `Doctor.load()`; the fleet and
the terminal UI then run many Sessions through the same Doctor. `load_catalogue()` is the probe
catalogue alone: collecting a node (also on fleet nodes, where networkx is not installed) needs
no runbooks.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from allreduce_doctor.probes.spec import Catalogue
from allreduce_doctor.resources import probe_files, runbook_files

if TYPE_CHECKING:
    from allreduce_doctor.runbook.model import RunbookSet

ROOT_RUNBOOK = "trunk"  # the shipped set's first runbook; its branches are picked by fabric
BRANCHES = {"ib": "ib", "roce": "roce"}  # node fabric -> the runbook that checks it


@lru_cache(maxsize=1)
def load_catalogue() -> Catalogue:
    """The shipped probe catalogue, loaded and cross-checked once."""
    from allreduce_doctor.probes.spec import load_catalogue as load

    return load(probe_files())


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
    def load(cls) -> Doctor:
        """The shipped knowledge (cached: loaded and checked once per process)."""
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
        return set().union(*(self.runbooks.runbooks[i].facts for i in ids if i in self.runbooks.runbooks))


@lru_cache(maxsize=1)
def _shipped() -> Doctor:
    from allreduce_doctor.runbook.loader import load_runbooks

    from allreduce_doctor.runbook.causes import catalogue_path

    catalogue = load_catalogue()
    paths = runbook_files()
    # The cause texts are part of the knowledge too: a changed fix text is a new hash.
    return Doctor(catalogue, load_runbooks(paths, catalogue.facts(), root=ROOT_RUNBOOK),
                  files_hash([*paths, catalogue_path()]))
