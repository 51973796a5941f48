"""A Diagnosis (its JSON form) as Prometheus text exposition, and node_exporter's textfile.

Hand-written on purpose (the format is small and stable; prometheus_client is only a test
dependency, whose parser checks this output): https://prometheus.io/docs/instrumenting/exposition_formats/
The verdict, the causes and the checks are gauges; the per-port 1-second rates (`port_rates`) are
gauges, and beside them the raw counters (`port_counters`), `*_total` with `# TYPE counter`, for
PromQL's rate() (node_exporter v1.12.1 exports InfiniBand's PortXmitWait the same way,
collector/infiniband_linux.go "port_transmit_wait_total").

Outcomes are state sets: every state of a verdict or of a check is a series, 1 for the current one
and 0 for the others (OpenMetrics "StateSet": "MUST contain one boolean per State"; an ENUM "MUST
have exactly one Boolean which is true"; node_exporter's node_systemd_unit_state, one 0/1 series
per state, collector/systemd_linux.go), so a check whose outcome changes keeps its series and
`allreduce_doctor_check{outcome="no"} == 1` is a plain alert expression.
"""

from __future__ import annotations

import os
import tempfile
from datetime import datetime
from pathlib import Path

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.metrics.port_counters import COUNTER_METRICS
from allreduce_doctor.metrics.port_rates import PORT_METRICS
from allreduce_doctor.status import VERDICTS  # the verdict words, written once (not_applicable too)

# node_exporter's textfile collector reads only files ending in .prom (node_exporter README,
# "Textfile Collector"), so a temporary name ending in .tmp is never read half-written.
TEXTFILE_SUFFIX = ".prom"
HEADER_HELP = {
    "allreduce_doctor_verdict": "The verdict of the last run: 1 for the current one, 0 for the others.",
    "allreduce_doctor_cause": "A cause found by the last run (primary or secondary finding).",
    "allreduce_doctor_check": "A check of the decision path of the last run: 1 for its outcome, 0 for the others.",
}
CHECK_OUTCOMES = ("yes", "no", "unknown", "skipped")  # runbook/graph.py: a check has yes, no, unknown
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


def _family(name: str, help_text: str, samples: list[tuple[dict, float]], kind: str = "gauge") -> list[str]:
    if not samples:
        return []  # an empty family says nothing; leave it out
    help_line = help_text.replace("\\", "\\\\").replace("\n", "\\n")
    return [f"# HELP {name} {help_line}", f"# TYPE {name} {kind}", *(_line(name, lab, v) for lab, v in samples)]


def _checks(d: dict) -> list[tuple[dict, float]]:
    skipped = set(d.get("skipped_checks") or [])
    samples: list[tuple[dict, float]] = []
    for step in d.get("path") or []:
        if step.get("kind") != "check":
            continue
        current = "skipped" if step.get("node") in skipped else step.get("outcome")
        states = CHECK_OUTCOMES if current in CHECK_OUTCOMES else (*CHECK_OUTCOMES, str(current))  # one is always 1
        samples += [({"check": step.get("node"), "outcome": o}, 1 if o == current else 0) for o in states]
    return samples


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
    families: dict[str, list[tuple[dict, float]]] = {
        "allreduce_doctor_verdict": [({"verdict": v}, 1 if v == verdict else 0) for v in VERDICTS],
        "allreduce_doctor_cause": [({"cause": f.get("cause"), "severity": f.get("severity"), "owner": f.get("owner")}, 1)
                                   for f in d.get("findings") or []],
        "allreduce_doctor_check": _checks(d),
    }
    out: list[str] = []
    for name, help_text in HEADER_HELP.items():
        out += _family(name, help_text, families[name])
    rates = d.get("port_rates") or []
    for name, help_text in PORT_METRICS.items():
        out += _family(name, help_text, [(r["labels"], r["value"]) for r in rates if r.get("metric") == name])
    counters = d.get("port_counters") or []
    for name, help_text in COUNTER_METRICS.items():
        out += _family(name, help_text, [(r["labels"], r["value"]) for r in counters if r.get("metric") == name], "counter")
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
