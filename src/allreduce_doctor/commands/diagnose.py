"""`allreduce-doctor diagnose`: this node, a snapshot bundle or pasted text, walked to a root cause.

Only argparse-level code at module level: the CLI builds this parser on each start of the command.
"""

from __future__ import annotations

import argparse
import sys

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.output import write_output
from allreduce_doctor.status import PROG, VERDICT_EXIT_HELP, verdict_exit
from allreduce_doctor.symptoms import SYMPTOMS

DIAGNOSE_DESCRIPTION = """\
Diagnose this node, a snapshot bundle or pasted logs: walk the decision tree (transport, links,
PCIe, GPUDirect, then the InfiniBand or RoCE branch) and name the root cause with its evidence,
fix and verification. Always headless; plain `allreduce-doctor` on a terminal opens the UI."""
DIAGNOSE_EPILOG = f"""\
examples:
  {PROG} diagnose                                   # this node, text report
  {PROG} diagnose --snapshot node.tar.gz --format json -o diag.json
  {PROG} diagnose --evidence nccl.log --evidence ibstat.txt
  {PROG} diagnose --answer validated_scale=two_nodes --export github

{VERDICT_EXIT_HELP}"""

def diagnose_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fabric", choices=("auto", "ib", "roce"), default="auto",
                   help="which branch to walk; auto picks it from the ports' link layer (default)")
    p.add_argument("--snapshot", metavar="PATH", help="diagnose a bundle (directory or .tar.gz) instead of this node")
    p.add_argument("--format", choices=("text", "json", "markdown", "prometheus", "npd", "csv"),
                   help="report format (default: text); prometheus: metrics; npd: node-problem-detector's one line; "
                   "csv: a pasted nccl-tests table's busbw per size beside the ceiling")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--answer", action="append", default=[], metavar="NAME=VALUE",
                   help="answer an operator question headless (repeatable), e.g. validated_scale=two_nodes")
    p.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                   help="seconds between the two counter samples (default 1)")
    p.add_argument("--site", metavar="FILE", help="the declared fabric policy (RoCE lossless/lossy, NCCL_IB_TC, "
                   "link rate) in TOML; default /etc/allreduce-doctor/site.toml when it exists")
    p.add_argument("--evidence", action="append", default=[], metavar="FILE",
                   help="pasted logs or tool output to diagnose from (repeatable; - reads stdin). "
                   "Alone it diagnoses the text only; with --snapshot or --live it adds to that node")
    p.add_argument("--live", action="store_true", help="with --evidence: also read this node")
    p.add_argument("--symptom", choices=SYMPTOMS,
                   help="what the job showed: narrows the candidate causes of pasted text")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="text report: every check on its own line (default: checks that share a reason are one line "
                   "with a count)")
    p.add_argument("--export", metavar="FORMAT",
                   help="write a ticket document in FORMAT instead of the report (see `export --help`); not with --format")


def add_parser(sub) -> None:
    diag = sub.add_parser("diagnose", description=DIAGNOSE_DESCRIPTION,
                          epilog=DIAGNOSE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    diagnose_args(diag)



def session_from_args(args, interactive: bool = False):
    """The Session a diagnose command line describes (the one place args become a Session)."""
    from allreduce_doctor.doctor import Doctor
    from allreduce_doctor.progress import stderr_progress
    from allreduce_doctor.ranges import check_interval
    from allreduce_doctor.session import Options, Session, parse_answers
    from allreduce_doctor.site import DEFAULT_SITE, load_site

    if args.evidence and not args.snapshot and not args.live:
        from allreduce_doctor.hosts.empty import EmptyHost

        host = EmptyHost()  # a ticket's pasted text, diagnosed on a laptop: no node to read
    else:
        from allreduce_doctor.hosts.select import open_host

        host = open_host(args.snapshot)
    check_interval(args.interval, live=host.kind == "live")  # before Options: one range per host, 0 or -1
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
    if host.kind == "live" and not interactive:
        options.progress = stderr_progress()
    return Session(doctor, host, options)


def _wants_tui(args) -> bool:
    return getattr(args, "implicit_diagnose", False) and args.format is None and not args.output and sys.stdout.isatty() \
        and sys.stdin.isatty() and not args.export


def run(args) -> int:
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
        except ModuleNotFoundError:  # no Textual: the report, as on a pipe
            pass
        else:
            what = args.snapshot or (", ".join(args.evidence) if args.evidence and not args.live else "this node")
            return run_app(lambda: session_from_args(args, interactive=True), what)
    session = session_from_args(args)
    if args.format == "csv":  # the pasted table's curve, not the report: one document per output
        from allreduce_doctor.busbw_csv import render_csv

        data = session.diagnose().to_dict()
        write_output(render_csv(session.observations), args.output)
        return verdict_exit(data.get("verdict"))
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
        write_output(render(data, args.format or "text", args.verbose), args.output)
    if args.format == "npd":  # node-problem-detector reads 0 OK, 1 NonOK, anything else Unknown
        from allreduce_doctor.metrics.npd import npd_exit

        return npd_exit(data.get("verdict"))
    return verdict_exit(data.get("verdict"))
