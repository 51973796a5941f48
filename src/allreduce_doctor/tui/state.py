"""The Session as the terminal UI uses it (no Textual here): planned probes, re-walks after an
answer, the data every view and exporter reads, and a fresh Host for the watch screen."""

from __future__ import annotations

from allreduce_doctor.observations import OK, Observation, Observations
from allreduce_doctor.probes.runner import ProbeRunner, plan

ANSWERS_FACT = "operator.answers"


def planned_probes(session) -> list:
    """The probes an observe() may run, before the fabric is known (both branches)."""
    facts = session.facts_for(None) | {"node.fabric"}
    return [s for s in plan(session.catalogue, facts) if s.kind not in ("derive", "evidence")]


def _dependents(catalogue, fact: str) -> set[str]:
    """Derived facts that read `fact`, directly or through other derived facts."""
    found: set[str] = set()
    grew = True
    while grew:
        grew = False
        for spec in catalogue.probes.values():
            if spec.kind == "derive" and spec.provides not in found and ({fact} | found) & set(spec.inputs):
                found.add(spec.provides)
                grew = True
    return found


def reanswer(session, answers: dict[str, str]):
    """Walk again with new answers: only the facts derived from the answers are recomputed
    (nothing is probed again), then the same diagnose() as the headless command."""
    session.answers = dict(answers)
    stale = _dependents(session.catalogue, ANSWERS_FACT) & set(session.observations.facts)
    known = Observations()
    for obs in session.observations.values():
        if obs.fact not in stale and obs.fact != ANSWERS_FACT:
            known.add(obs)
    known.add(Observation(ANSWERS_FACT, dict(answers), OK, "--answer", "", "operator_answers"))
    if stale:
        known = ProbeRunner(session.catalogue, session.host, session.interval).run(stale, known=known)
    session.observations = known
    return session.diagnose()


def diagnosis_data(session, diagnosis) -> dict:
    """The JSON form, with what the headless diagnose adds (bundle, evidence used)."""
    data = diagnosis.to_dict()
    if getattr(session, "bundle", None):
        data.setdefault("context", {})["bundle"] = session.bundle
    if getattr(session, "evidence_report", None) is not None:
        data["evidence_used"] = session.evidence_report
    return data


def where(session, full: bool = True) -> str:
    """'H (bundle B)' / 'H (live)' / 'pasted evidence only'; just 'H' when not full."""
    if session.host.kind == "evidence":
        return "pasted evidence only"
    name = session.host.identity().hostname or "?"
    if not full:
        return name
    bundle = getattr(session, "bundle", None)
    return f"{name} ({'bundle ' + short_path(bundle) if bundle else session.host.kind})"


def short_path(path: str, limit: int = 32) -> str:
    """A bundle path that fits a title line: its last two components when it is long."""
    parts = str(path).replace("\\", "/").rstrip("/").split("/")
    return path if len(path) <= limit or len(parts) < 3 else ".../" + "/".join(parts[-2:])


def watch_host(bundle: str | None, kind: str):
    """A Host of its own for the watch screen (the session's bundle host has moved past its samples)."""
    if kind == "evidence":
        return None
    if bundle:
        from allreduce_doctor.hosts.snapshot import SnapshotHost

        return SnapshotHost(bundle)
    from allreduce_doctor.hosts.live import LiveHost

    return LiveHost()


def raw_facts(session, refs: list[str]) -> list[Observation]:
    """The full observations behind fact references (untruncated values)."""
    from allreduce_doctor.tui.tree_model import fact_of

    out, seen = [], set()
    for ref in refs:
        fact = fact_of(ref, session.observations.facts)
        if fact and fact not in seen:
            seen.add(fact)
            out.append(session.observations.get(fact))
    return out


REPORT_FORMATS = {"text": "the on-call text report", "markdown": "the Markdown report", "json": "the Diagnosis as JSON"}


def export_formats():
    """({format: what it is}, render): the export package's when it is there, else the report's."""
    try:
        from allreduce_doctor.export import FORMATS, render_export
    except ImportError:
        from allreduce_doctor.report import render

        return dict(REPORT_FORMATS), render
    return dict(FORMATS), render_export
