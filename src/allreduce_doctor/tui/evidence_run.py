"""Evidence added from the terminal UI (no Textual here): the texts and files a diagnosis read,
a new Session over the same source with a paste added, and the symptom re-ranking a paste.

A paste's facts combine across its files (NCCL's log in one, `show_gids` in another decide the
GID together), so adding text reads every source again, through load_evidence, into a new
Session; nothing is merged by hand. Pasted text is written to a private temporary folder only
while it is read."""

from __future__ import annotations

import dataclasses
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from allreduce_doctor.errors import DoctorError

STDIN_NAME = "<stdin>"  # evidence/reader.display_name of '-'
PASTED = "pasted-{}.txt"


@dataclass
class Sources:
    """What the evidence of a diagnosis was read from: files by path, and texts pasted in the UI."""

    paths: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, session) -> Sources:
        report = session.options.evidence_report or {}
        return cls([f["file"] for f in report.get("files") or []])

    def plus(self, path: str = "", text: str = "") -> Sources:
        return Sources(self.paths + ([path] if path else []), self.texts + ([text] if text.strip() else []))


def with_evidence(session, sources: Sources):
    """(a new Session over the session's source with these sources as its evidence, its Diagnosis
    as a dict). DoctorError, one line, when a source cannot be read or holds no signal."""
    from allreduce_doctor.evidence import load_evidence
    from allreduce_doctor.session import Session

    if STDIN_NAME in sources.paths:
        raise DoctorError("the evidence read from stdin cannot be read again: save it to a file and run "
                          "`allreduce-doctor --evidence FILE`")
    with tempfile.TemporaryDirectory(prefix="allreduce-doctor-paste-") as folder:
        pasted = []
        for i, text in enumerate(sources.texts, 1):
            path = Path(folder) / PASTED.format(i)
            path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
            pasted.append(str(path))
        result = load_evidence(sources.paths + pasted, session.options.symptom)
    options = dataclasses.replace(session.options, evidence=result.observations, evidence_report=result.report,
                                  progress=None, deadline=None)
    new = Session(session.doctor, _fresh_host(session), options)
    return new, new.diagnose().to_dict()


def _fresh_host(session):
    """The same source read afresh (a bundle's host has moved past its counter samples)."""
    from allreduce_doctor.tui.state import watch_host

    if session.host.kind == "evidence":
        from allreduce_doctor.hosts.empty import EmptyHost

        return EmptyHost()
    return watch_host(session.options.bundle, session.host.kind)


def with_symptom(session, symptom: str | None) -> dict:
    """The Diagnosis walked again with what the reporter saw (None: not said); nothing is read again."""
    session.options.symptom = symptom
    return session.diagnose().to_dict()


def ranks_candidates(session) -> bool:
    """Only pasted text alone is ranked into candidates (Session.diagnose): the symptom counts there."""
    return session.host.kind == "evidence"
