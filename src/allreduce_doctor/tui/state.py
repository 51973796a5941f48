"""The Session as the terminal UI uses it (no Textual here): planned probes, where it reads,
the raw facts behind a step, and a fresh Host for the watch screen."""

from __future__ import annotations

from allreduce_doctor.observations import Observation
from allreduce_doctor.probes.runner import plan


def planned_probes(session) -> list:
    """The probes an observe() may run, before the fabric is known (both branches)."""
    facts = session.doctor.facts_for(None) | {"node.fabric"}
    return [s for s in plan(session.catalogue, facts) if s.kind not in ("derive", "evidence")]


def where(session, full: bool = True) -> str:
    """'H (bundle B)' / 'H (live)' / 'pasted evidence only'; just 'H' when not full."""
    if session.host.kind == "evidence":
        return "pasted evidence only"
    name = session.host.identity().hostname or "?"
    if not full:
        return name
    bundle = session.options.bundle
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
