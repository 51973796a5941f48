"""The health check itself: a bounded diagnosis of node settings, with its own scope.

Settings only by default: the counter probes (sampled twice, an interval apart) and every
fact derived from them are not observed, so nothing waits for a counter window; the checks
that read them are out of scope ("skipped"), not inconclusive. `--interval S` brings them in.
A time budget bounds the run: probes not started by the deadline stay unknown, and unknown
makes the verdict inconclusive (a fault only under --strict).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from allreduce_doctor.observations import MISSING, Observation, Observations

NOT_SAMPLED = "not sampled: healthcheck reads node settings only (--interval S samples the counters)"
# Seconds of the budget kept for what follows the probes: the walk, the report, scontrol.
RESERVE_SECONDS = 1.5


@dataclass
class HealthRun:
    diagnosis: dict  # the Diagnosis JSON, verdict scoped, plus skipped_checks
    observations: Observations


def counter_facts(catalogue) -> set[str]:
    """Facts read from counter samples, and every fact derived from one of them."""
    facts = {spec.provides for spec in catalogue.probes.values() if spec.sampled}
    grown = True
    while grown:
        grown = False
        for spec in catalogue.probes.values():
            if spec.kind == "derive" and spec.provides not in facts and facts & set(spec.inputs):
                facts.add(spec.provides)
                grown = True
    return facts


def checks_reading(runbooks, facts: set[str]) -> set[str]:
    """Keys of the checks whose condition reads one of `facts`."""
    return {node.key for node in runbooks.nodes()
            if getattr(node, "condition", None) is not None and node.condition.facts & facts}


def scope(diagnosis: dict, skipped: set[str]) -> dict:
    """Unknowns of skipped checks are out of scope: they neither count nor make it inconclusive."""
    unknown = diagnosis.get("inconclusive") or []
    diagnosis["skipped_checks"] = sorted(skipped)
    diagnosis["inconclusive"] = [i for i in unknown if i.get("node") not in skipped]
    if diagnosis.get("verdict") == "inconclusive" and not diagnosis["inconclusive"]:
        diagnosis["verdict"] = "healthy"
    return diagnosis


def run_session(host, fabric: str, interval: float | None, deadline: float) -> HealthRun:
    """The one place the health check builds a Session (observe -> walk -> Diagnosis)."""
    from allreduce_doctor.doctor import Doctor
    from allreduce_doctor.session import Options, Session

    doctor = Doctor.load()
    left_out = set() if interval is not None else counter_facts(doctor.catalogue)
    not_sampled = [Observation(f, None, MISSING, "", NOT_SAMPLED, "healthcheck") for f in sorted(left_out)]
    session = Session(doctor, host, Options(fabric=fabric, interval=interval or 0.0, deadline=deadline,
                                            evidence=not_sampled))
    diagnosis = session.diagnose().to_dict()
    return HealthRun(scope(diagnosis, checks_reading(doctor.runbooks, left_out)), session.observations)


def probe_deadline(started: float, budget: float) -> float:
    """When the probes must stop: the budget less what the walk, report and scontrol need."""
    return started + max(budget - RESERVE_SECONDS, budget / 2)


def time_left(started: float, budget: float) -> float:
    return started + budget - time.monotonic()


def process_started() -> float:
    """This process's start on the time.monotonic() clock, so a budget counts the interpreter's start-up
    and the imports too. Linux: /proc/self/stat field 22, starttime, in clock ticks since boot (proc(5)),
    on the CLOCK_BOOTTIME clock (kernel fs/proc/array.c, start_boottime). Elsewhere, unreadable, or a
    process that is not the tool's own (main() called from another program, a test runner): now."""
    now = time.monotonic()
    if not _the_tools_own_process():
        return now
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            fields = stat.read().rpartition(")")[2].split()  # after the command name, which may hold spaces
        ticks = int(fields[19])  # field 22 of proc(5); fields[0] is field 3 (state)
        since_start = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return now
    return now - since_start if 0 <= since_start < 3600 else now


def _the_tools_own_process() -> bool:
    """Whether this process was started as the tool (the allreduce-doctor script, or python -m
    allreduce_doctor): only then is the process's start the start of this run."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    return argv0.name == "allreduce-doctor" or (argv0.name == "__main__.py" and argv0.parent.name == "allreduce_doctor")


def overrun_line(started: float, budget: float) -> str | None:
    """The one stderr line of a run that took longer than --budget (from the process's start), else None."""
    took = time.monotonic() - started
    if took <= budget:
        return None
    return (f"allreduce-doctor: warning: --budget {budget:g} overran: took {took:.2f} s from the process's start, "
            f"{took - budget:.2f} s over; probes not started in time are unknown")
