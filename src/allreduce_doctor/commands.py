"""The work behind each CLI command. cli.py parses; this module does."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from allreduce_doctor.cli import EXIT_BAD_INPUT, EXIT_FAULT, EXIT_HEALTHY, EXIT_INCONCLUSIVE
from allreduce_doctor.errors import DoctorError

VERDICT_EXIT = {"healthy": EXIT_HEALTHY, "fault": EXIT_FAULT, "inconclusive": EXIT_INCONCLUSIVE}


def _parse_answers(pairs: list[str]) -> dict[str, str]:
    answers = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise DoctorError(f"--answer {pair!r}: expected NAME=VALUE, e.g. --answer validated_scale=two_nodes")
        answers[name.strip()] = value.strip()
    return answers


def _open_host(snapshot: str | None):
    if snapshot:
        from allreduce_doctor.hosts.snapshot import SnapshotHost

        return SnapshotHost(snapshot)
    from allreduce_doctor.hosts.live import LiveHost

    return LiveHost()


def _write(text: str, output: str | None) -> None:
    if not output or output == "-":
        sys.stdout.write(text)
        return
    try:
        target = Path(output)
        if target.exists() and not target.is_file():  # /dev/null, a FIFO: write in place, never replace it
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(text)
            return
        tmp = f"{output}.tmp-{os.getpid()}"
        Path(tmp).write_text(text, encoding="utf-8")
        os.replace(tmp, output)  # a regular file appears whole or not at all
    except OSError as err:
        raise DoctorError(f"cannot write {output}: {err.strerror or err}") from None


def _evidence(paths: list[str]):
    """Observations from pasted text (the evidence package), or ([], None) without --evidence."""
    if not paths:
        return [], None
    from allreduce_doctor.evidence import load_evidence

    result = load_evidence(paths)
    return result.observations, result.report


def build_session(args, interactive: bool = False):
    """The Session a diagnose command describes (also used by the terminal UI)."""
    from allreduce_doctor.progress import stderr_progress
    from allreduce_doctor.session import Session

    if args.interval < 0 or args.interval > 600:
        raise DoctorError(f"--interval {args.interval:g}: expected 0 to 600 seconds")
    observations, report = _evidence(args.evidence)
    if args.evidence and not args.snapshot and not args.live:
        from allreduce_doctor.hosts.empty import EmptyHost

        host = EmptyHost()  # a ticket's pasted text, diagnosed on a laptop: no node to read
    else:
        host = _open_host(args.snapshot)
    progress = stderr_progress() if host.kind == "live" and not interactive else None
    session = Session(host, fabric=args.fabric, interval=args.interval, answers=_parse_answers(args.answer),
                      progress=progress, extra_observations=observations)
    session.evidence_report = report
    session.bundle = args.snapshot
    return session


def _wants_tui(args) -> bool:
    return getattr(args, "implicit_diagnose", False) and args.format is None and not args.output and sys.stdout.isatty() \
        and sys.stdin.isatty() and not args.export


def cmd_diagnose(args) -> int:
    import time

    from allreduce_doctor.report import render

    started = time.monotonic()
    if _wants_tui(args):
        try:
            from allreduce_doctor.tui.app import run_app
        except ModuleNotFoundError:
            run_app = None
        if run_app is not None:
            return run_app(args)
    session = build_session(args)
    data = session.diagnose().to_dict()
    if args.snapshot:
        data.setdefault("context", {})["bundle"] = args.snapshot
    if session.evidence_report is not None:
        data["evidence_used"] = session.evidence_report
    if args.format == "prometheus":  # the metrics carry port rates and run time, which the JSON does not
        from allreduce_doctor.export.port_rates import attach_run

        attach_run(data, session.observations, started)
    if args.export:  # diagnose and write the ticket document in one step
        from allreduce_doctor.export import render_export

        _write(render_export(data, args.export), args.output)
    else:
        _write(render(data, args.format or "text"), args.output)
    if args.format == "npd":  # node-problem-detector reads 0 OK, 1 NonOK, anything else Unknown
        from allreduce_doctor.healthcheck.npd import npd_exit

        return npd_exit(data.get("verdict"))
    return VERDICT_EXIT.get(data.get("verdict"), EXIT_INCONCLUSIVE)


def cmd_collect(args) -> int:
    from allreduce_doctor.collect import collect

    if args.interval < 0 or args.interval > 600:
        raise DoctorError(f"--interval {args.interval:g}: expected 0 to 600 seconds")
    summary = collect(args.output, args.interval)
    print(summary)
    return EXIT_HEALTHY


def cmd_probes(args) -> int:
    from allreduce_doctor.session import load_probe_catalogue

    catalogue = load_probe_catalogue()
    rows = []
    for spec in catalogue.probes.values():
        if spec.kind in ("derive", "evidence"):
            continue
        timeout = f"{spec.timeout:g}s" if spec.kind == "command" else "-"
        each = f" (each {spec.foreach})" if spec.foreach else ""
        for target in spec.touches():
            rows.append((spec.id, spec.kind, timeout, "root" if spec.root else "", target + each))
    width = max(len(r[0]) for r in rows)
    lines = [f"{'PROBE':<{width}}  {'KIND':<8} {'TIMEOUT':<7} {'ROOT':<4}  TOUCHES"]
    lines += [f"{r[0]:<{width}}  {r[1]:<8} {r[2]:<7} {r[3]:<4}  {r[4]}" for r in rows]
    lines.append("")
    lines.append("Enumerators (what probes fan out over):")
    for enum in catalogue.enumerators.values():
        lines.append(f"  {enum.name}: {enum.glob or 'from ' + enum.source}")
        lines += [f"    reads {t}" for t in (*enum.read.values(), *enum.first.values(), *enum.links.values())]
    _write("\n".join(lines) + "\n", None)
    return EXIT_HEALTHY


def cmd_runbook(args) -> int:
    from allreduce_doctor.session import load_probe_catalogue, load_shipped_runbooks

    catalogue = load_probe_catalogue()
    paths = [Path(f) for f in args.files] or None
    for path in paths or []:
        if not path.is_file():
            raise DoctorError(f"{path}: no such runbook file")
    runbooks = load_shipped_runbooks(catalogue, paths)
    if args.runbook_command == "validate":
        names = ", ".join(sorted(runbooks.runbooks))
        causes = {getattr(n, "cause", None) for n in runbooks.nodes()} - {None}
        print(f"ok: {len(runbooks.runbooks)} runbooks ({names}), {len(runbooks.nodes())} nodes, "
              f"{len(runbooks.facts)} facts read, {len(causes)} causes reachable")
        return EXIT_HEALTHY
    from allreduce_doctor.runbook.graph import to_dot, to_mermaid

    if args.runbook and args.runbook not in runbooks.runbooks:
        raise DoctorError(f"--runbook {args.runbook}: no such runbook (have: {', '.join(sorted(runbooks.runbooks))})")
    render = to_dot if args.format == "dot" else to_mermaid
    _write(render(runbooks, args.runbook), None)
    return EXIT_HEALTHY


__all__ = ["cmd_diagnose", "cmd_collect", "cmd_probes", "cmd_runbook", "EXIT_BAD_INPUT"]
