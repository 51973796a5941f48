"""What `healthcheck` does, in order: validate, diagnose within the budget, report, drain or resume."""

from __future__ import annotations

import os
import sys
import time

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.healthcheck import slurm_drain
from allreduce_doctor.healthcheck.check import probe_deadline, run_session, time_left
from allreduce_doctor.scontrol import ScontrolError
from allreduce_doctor.status import (
    EXIT_FAULT,
    EXIT_HEALTHY,
    EXIT_INCONCLUSIVE,
    EXIT_NOT_APPLICABLE,
    HEALTHY,
    INCONCLUSIVE,
    NOT_APPLICABLE,
)

MAX_BUDGET = 3600.0  # seconds: a health check longer than an hour is a misconfiguration


def _validate(args) -> None:
    if not 0 < args.budget <= MAX_BUDGET:
        raise DoctorError(f"--budget {args.budget:g}: expected more than 0 and at most {MAX_BUDGET:g} seconds")
    if args.interval is not None and not 0 <= args.interval < args.budget / 2:
        raise DoctorError(f"--interval {args.interval:g}: the counter window must fit in half of --budget {args.budget:g}")
    if (args.drain or args.resume) and args.snapshot and not args.node:
        raise DoctorError("--drain/--resume with --snapshot: name the Slurm node with --node NAME "
                          "(the bundle's host is not necessarily this node)")
    if args.node:
        slurm_drain.check_node_name(args.node)


def exit_code(verdict: str | None, strict: bool) -> int:
    """diagnose's codes: 0 healthy, 1 fault, 3 inconclusive, 4 nothing to diagnose (no GPUs, no RDMA: not
    healthy, so a container that lost its HCAs does not pass); --strict makes 3 and 4 a fault."""
    if verdict == "fault" or (strict and verdict in (INCONCLUSIVE, NOT_APPLICABLE)):
        return EXIT_FAULT
    return EXIT_HEALTHY if verdict == HEALTHY else EXIT_NOT_APPLICABLE if verdict == NOT_APPLICABLE else EXIT_INCONCLUSIVE


def _render(data: dict, fmt: str, strict: bool) -> str:
    if fmt == "nhc":
        from allreduce_doctor.metrics.nhc import render_nhc

        return render_nhc(data, strict)
    from allreduce_doctor.report import render

    return render(data, fmt)


def _drain_cause(data: dict) -> str:
    root = data.get("root_cause") or {}
    return root.get("id") or f"{data.get('verdict') or INCONCLUSIVE} (--strict)"


def _node_name(args, host) -> str:
    if args.node:
        return args.node
    name = os.environ.get("SLURMD_NODENAME") or host.identity().hostname.split(".")[0]
    return slurm_drain.check_node_name(name)


def _slurm(args, data: dict, code: int, started: float) -> None:
    """Drain on a fault, resume when healthy; an inconclusive run changes nothing."""
    from allreduce_doctor.hosts.live import LiveHost

    wants_drain, wants_resume = args.drain and code == EXIT_FAULT, args.resume and code == EXIT_HEALTHY
    if not (wants_drain or wants_resume):
        return
    host = LiveHost()  # scontrol runs here, like every command: argv list, timeout
    node = _node_name(args, host)
    left, action = time_left(started, args.budget), "drain" if wants_drain else "resume"
    try:
        if left <= 0:
            raise ScontrolError("the time budget was spent")
        note = slurm_drain.drain(host, node, _drain_cause(data), left) if wants_drain \
            else slurm_drain.resume(host, node, left)
    except ScontrolError as err:  # the verdict still decides the exit code
        print(f"allreduce-doctor: error: cannot {action} {node}: {err}", file=sys.stderr)
        return
    print(f"allreduce-doctor: {note}", file=sys.stderr)


def healthcheck(args) -> int:
    from allreduce_doctor.hosts.select import open_host
    from allreduce_doctor.metrics.port_rates import attach_run
    from allreduce_doctor.metrics.prometheus import render_prometheus, write_textfile

    started = time.monotonic()
    _validate(args)
    host = open_host(args.snapshot)
    result = run_session(host, args.fabric, args.interval, probe_deadline(started, args.budget))
    data = result.diagnosis
    if args.snapshot:
        data.setdefault("context", {})["bundle"] = args.snapshot
    code = exit_code(data.get("verdict"), args.strict)
    attach_run(data, result.observations, started)
    if args.textfile:
        write_textfile(args.textfile, render_prometheus(data))
    sys.stdout.write(_render(data, args.format, args.strict))
    _slurm(args, data, code, started)
    if args.format == "npd":
        from allreduce_doctor.metrics.npd import npd_exit

        return npd_exit(data.get("verdict"), args.strict)
    return code
