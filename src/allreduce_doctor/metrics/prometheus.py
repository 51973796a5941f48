"""A Diagnosis (its JSON form) as Prometheus text exposition, and node_exporter's textfile.

Hand-written on purpose (the format is small and stable; prometheus_client is only a test
dependency, whose parser checks this output): https://prometheus.io/docs/instrumenting/exposition_formats/
Every series is a gauge. Per-port rates come from `port_rates` (attached by attach_run).
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.metrics.port_rates import PORT_METRICS
from allreduce_doctor.status import VERDICTS  # the verdict words, written once (not_applicable too)

# node_exporter's textfile collector reads only files ending in .prom (node_exporter README,
# "Textfile Collector"), so a temporary name ending in .tmp is never read half-written.
TEXTFILE_SUFFIX = ".prom"
HEADER_HELP = {
    "allreduce_doctor_verdict": "The verdict of the last run: 1 for the current one, 0 for the others.",
    "allreduce_doctor_cause": "A cause found by the last run (primary or secondary finding).",
    "allreduce_doctor_check": "A check of the decision path and its outcome in the last run.",
}
TRAILER_HELP = {
    "allreduce_doctor_last_run_timestamp_seconds": "Unix time at which the last run finished.",
    "allreduce_doctor_run_duration_seconds": "Seconds the last run took.",
}


def _escape(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _line(name: str, labels: dict, value: float) -> str:
    inner = ",".join(f'{key}="{_escape(val)}"' for key, val in labels.items())
    number = int(value) if float(value).is_integer() and abs(value) < 2**53 else repr(float(value))
    return f"{name}{{{inner}}} {number}" if inner else f"{name} {number}"


def _family(name: str, help_text: str, samples: list[tuple[dict, float]]) -> list[str]:
    if not samples:
        return []  # an empty family says nothing; leave it out
    help_line = help_text.replace("\\", "\\\\").replace("\n", "\\n")
    return [f"# HELP {name} {help_line}", f"# TYPE {name} gauge", *(_line(name, lab, v) for lab, v in samples)]


def _finished(d: dict) -> float | None:
    run = d.get("run") or {}
    if isinstance(run.get("finished_timestamp_seconds"), (int, float)):
        return float(run["finished_timestamp_seconds"])
    stamp = (d.get("context") or {}).get("diagnosed_at")
    try:
        return datetime.fromisoformat(stamp).timestamp() if stamp else None
    except (TypeError, ValueError):
        return None


def render_prometheus(d: dict) -> str:
    verdict = d.get("verdict")
    skipped = set(d.get("skipped_checks") or [])
    families = {
        "allreduce_doctor_verdict": [({"verdict": v}, 1 if v == verdict else 0) for v in VERDICTS],
        "allreduce_doctor_cause": [({"cause": f.get("cause"), "severity": f.get("severity"), "owner": f.get("owner")}, 1)
                                   for f in d.get("findings") or []],
        "allreduce_doctor_check": [({"check": s.get("node"), "outcome": "skipped" if s.get("node") in skipped
                                     else s.get("outcome")}, 1)
                                   for s in d.get("path") or [] if s.get("kind") == "check"],
    }
    out: list[str] = []
    for name, help_text in HEADER_HELP.items():
        out += _family(name, help_text, families[name])
    rates = d.get("port_rates") or []
    for name, help_text in PORT_METRICS.items():
        out += _family(name, help_text, [(r["labels"], r["value"]) for r in rates if r.get("metric") == name])
    finished, duration = _finished(d), (d.get("run") or {}).get("duration_seconds")
    out += _family("allreduce_doctor_last_run_timestamp_seconds", TRAILER_HELP["allreduce_doctor_last_run_timestamp_seconds"],
                   [({}, finished)] if finished is not None else [])
    out += _family("allreduce_doctor_run_duration_seconds", TRAILER_HELP["allreduce_doctor_run_duration_seconds"],
                   [({}, float(duration))] if isinstance(duration, (int, float)) else [])
    return "\n".join(out) + "\n"


def write_textfile(path: str, text: str) -> None:
    """Write `text` to PATH atomically for node_exporter's textfile collector.

    The temporary file is made by mkstemp (O_CREAT|O_EXCL: never follows a link at its name) in
    PATH's own directory, fsynced, made world-readable, then renamed over PATH; os.replace
    replaces a link at PATH itself, never the file it points at."""
    target = Path(path)
    if not target.name.endswith(TEXTFILE_SUFFIX):
        raise DoctorError(f"--textfile {path}: node_exporter's textfile collector reads only files ending in .prom")
    if target.is_dir():
        raise DoctorError(f"--textfile {path}: is a directory; name the file, e.g. {target / 'allreduce_doctor.prom'}")
    directory = target.parent
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as err:
        raise DoctorError(f"--textfile {path}: cannot write in {directory}: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
            os.fchmod(fh.fileno(), 0o644)  # node_exporter usually runs as another user
        os.replace(tmp, target)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise DoctorError(f"--textfile {path}: cannot write: {err.strerror or err}") from None
