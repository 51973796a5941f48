"""The work behind each CLI command. cli.py parses; this module does."""

from __future__ import annotations

import sys
from pathlib import Path

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.output import write_output
from allreduce_doctor.status import EXIT_HEALTHY, verdict_exit


def session_from_args(args, interactive: bool = False):
    """The Session a diagnose command line describes (the one place args become a Session)."""
    from allreduce_doctor.doctor import Doctor
    from allreduce_doctor.progress import stderr_progress
    from allreduce_doctor.session import Options, Session, check_interval, parse_answers
    from allreduce_doctor.site import DEFAULT_SITE, load_site

    doctor = Doctor.load()
    answers = parse_answers(args.answer, doctor.runbooks.answers)
    site = load_site(args.site) if args.site else load_site(DEFAULT_SITE, required=False)
    options = Options(fabric=args.fabric, interval=args.interval, answers=answers, bundle=args.snapshot,
                      site=site, symptom=getattr(args, "symptom", None))
    if args.evidence:
        from allreduce_doctor.evidence import load_evidence

        result = load_evidence(args.evidence, options.symptom)
        options.evidence, options.evidence_report = result.observations, result.report
        options.evidence_hosts = result.hosts
    if args.evidence and not args.snapshot and not args.live:
        from allreduce_doctor.hosts.empty import EmptyHost

        host = EmptyHost()  # a ticket's pasted text, diagnosed on a laptop: no node to read
    else:
        from allreduce_doctor.hosts.select import open_host

        host = open_host(args.snapshot)
    if host.kind == "live":
        check_interval(args.interval, live=True)
    if host.kind == "live" and not interactive:
        options.progress = stderr_progress()
    return Session(doctor, host, options)


def _wants_tui(args) -> bool:
    return getattr(args, "implicit_diagnose", False) and args.format is None and not args.output and sys.stdout.isatty() \
        and sys.stdin.isatty() and not args.export


def cmd_diagnose(args) -> int:
    import time

    from allreduce_doctor.report import render

    started = time.monotonic()
    if args.export and args.format:  # one output, one document: never a ticket under a report's name
        raise DoctorError(f"--export {args.export} with --format {args.format}: --export writes the ticket "
                          "document instead of the report; drop one, or write the report with -o FILE and run "
                          f"`allreduce-doctor export FILE --to {args.export}`")
    if _wants_tui(args):
        try:
            from allreduce_doctor.tui.app import run_app
        except ModuleNotFoundError:
            run_app = None
        if run_app is not None:
            what = args.snapshot or (", ".join(args.evidence) if args.evidence and not args.live else "this node")
            return run_app(lambda: session_from_args(args, interactive=True), what)
    session = session_from_args(args)
    if session.options.evidence_hosts:  # a paste of several hosts: each diagnosed as its node, then the fleet's rule
        from allreduce_doctor.fleet import pasted

        if pasted.several_hosts(session):
            return pasted.write_report(session, args)
    data = session.diagnose().to_dict()
    if args.format == "prometheus":  # the metrics carry port rates and run time, which the JSON does not
        from allreduce_doctor.metrics.port_rates import attach_run

        attach_run(data, session.observations, started)
    if args.export:  # diagnose and write the ticket document in one step
        from allreduce_doctor.export import render_export

        write_output(render_export(data, args.export), args.output)
    else:
        write_output(render(data, args.format or "text"), args.output)
    if args.format == "npd":  # node-problem-detector reads 0 OK, 1 NonOK, anything else Unknown
        from allreduce_doctor.metrics.npd import npd_exit

        return npd_exit(data.get("verdict"))
    return verdict_exit(data.get("verdict"))


def cmd_collect(args) -> int:
    from allreduce_doctor.collect import collect
    from allreduce_doctor.session import check_interval

    check_interval(args.interval, live=True)
    summary = collect(args.output, args.interval, args.force)
    print(summary)
    return EXIT_HEALTHY


def cmd_probes(args) -> int:
    from allreduce_doctor.doctor import load_catalogue

    catalogue = load_catalogue()
    rows = []
    for spec in catalogue.probes.values():
        if spec.kind in ("derive", "evidence"):
            continue
        timeout = f"{spec.timeout:g}s" if spec.kind in ("command", "chain") else "-"
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
    write_output("\n".join(lines) + "\n", None)
    return EXIT_HEALTHY


def cmd_runbook(args) -> int:
    from allreduce_doctor.doctor import Doctor

    paths = [Path(f) for f in args.files]
    for path in paths:
        if not path.is_file():
            raise DoctorError(f"{path}: no such runbook file")
    validate = args.runbook_command == "validate"  # checks the files afresh, never trusts the cache
    runbooks = (Doctor.from_runbook_files(paths) if paths else Doctor.load(validate=validate)).runbooks
    if validate:
        names = ", ".join(sorted(runbooks.runbooks))
        causes = {getattr(n, "cause", None) for n in runbooks.nodes()} - {None}
        print(f"ok: {len(runbooks.runbooks)} runbooks ({names}), {len(runbooks.nodes())} nodes, "
              f"{len(runbooks.facts)} facts read, {len(causes)} causes reachable")
        return EXIT_HEALTHY
    from allreduce_doctor.runbook.graph import to_dot, to_mermaid

    if args.runbook and args.runbook not in runbooks.runbooks:
        raise DoctorError(f"--runbook {args.runbook}: no such runbook (have: {', '.join(sorted(runbooks.runbooks))})")
    render = to_dot if args.format == "dot" else to_mermaid
    write_output(render(runbooks, args.runbook), None)
    return EXIT_HEALTHY


__all__ = ["cmd_diagnose", "cmd_collect", "cmd_probes", "cmd_runbook", "session_from_args"]
