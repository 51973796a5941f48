"""`allreduce-doctor fleet`: compare every node of a job and name the odd ones out.

Only argparse at the top: the work is imported inside run(), so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import re

from allreduce_doctor.status import VERDICT_EXIT_HELP

SAFE_PYTHON = re.compile(r"[A-Za-z0-9_./+-]+")  # it becomes part of the remote shell command


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "fleet", description="Collect every node (in parallel over SSH, nothing installed on the nodes), diagnose each, "
        "and compare them: per setting the majority value and the nodes that differ, numeric outliers by "
        "median and MAD, and fleet-wide patterns (a PFC pause cascade, local or fabric-wide loss).",
        epilog=f"{VERDICT_EXIT_HELP} A node that gave no bundle makes the fleet inconclusive.")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--nodes", metavar="NODESET", help="ClusterShell node set: gpu[001-128], gpu[01-04],gpu09, @group")
    where.add_argument("--slurm-job", metavar="ID", help="the nodes of this Slurm job (scontrol show hostnames)")
    where.add_argument("--snapshots", metavar="DIR", help="compare bundles already collected: DIR/NODE.tar.gz or DIR/NODE/")
    ssh = p.add_argument_group("collecting over SSH (--nodes, --slurm-job)")
    ssh.add_argument("--fanout", type=int, default=64, metavar="N", help="nodes collected at once (default 64)")
    ssh.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                     help="per node: a node not done by then is reported and dropped (default 120)")
    ssh.add_argument("--connect-timeout", type=int, default=10, metavar="SECONDS", help="ssh connect timeout (default 10)")
    ssh.add_argument("--ssh-options", default="", metavar="OPTIONS",
                     help="extra ssh arguments, e.g. \"-F ~/.ssh/fleet_config -l admin\"")
    ssh.add_argument("--remote-python", default="python3", metavar="PATH",
                     help="python 3.11+ on the nodes (default python3)")
    ssh.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                     help="seconds between the two counter samples on each node (default 1)")
    ssh.add_argument("--keep-bundles", metavar="DIR", help="keep the collected bundles as DIR/NODE.tar.gz")
    p.add_argument("--fabric", choices=("auto", "ib", "roce"), default="auto", help="branch for every node (default auto)")
    p.add_argument("--answer", action="append", default=[], metavar="NAME=VALUE", help="answer an operator question (repeatable)")
    p.add_argument("--per-node", metavar="DIR", help="also write each node's own diagnosis as DIR/NODE.json")
    p.add_argument("--jobs", type=int, default=0, metavar="N",
                   help="local processes diagnosing nodes (default: every core this process may use)")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text", help="report format (default text)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--export", metavar="FORMAT", help="write a ticket document in FORMAT instead of the report")
    p.add_argument("--tui", action="store_true",
                   help="show the fleet in the terminal UI: settings by node, enter drills into a node's diagnosis")
    return p


def _check(args) -> None:
    from allreduce_doctor.errors import DoctorError
    from allreduce_doctor.ranges import check_interval, check_range

    check_range(args.fanout, 1, 10000, "--fanout", "nodes")
    check_range(args.timeout, 1, 3600, "--timeout", "seconds")
    check_range(args.connect_timeout, 1, 600, "--connect-timeout", "seconds")
    check_interval(args.interval, live=not args.snapshots)  # collected over SSH: two live samples on each node
    check_range(args.jobs, 0, 256, "--jobs", "processes")
    if not SAFE_PYTHON.fullmatch(args.remote_python):
        raise DoctorError(f"--remote-python {args.remote_python!r}: expected a command name or path")


def _check_tui(args) -> None:
    import sys

    from allreduce_doctor.errors import DoctorError

    if not args.tui:
        return
    if args.output or args.export or args.format != "text":
        raise DoctorError("--tui shows the fleet in the terminal; drop --format, --output and --export")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise DoctorError("--tui needs a terminal on stdin and stdout; without --tui the fleet report is printed")


def _collect(args, nodes: list[str] | str, out_dir):
    from allreduce_doctor.errors import DoctorError

    try:
        from allreduce_doctor.fleet.ssh_collect import SshOptions, collect_nodes
    except ModuleNotFoundError as err:
        if err.name and err.name.startswith("ClusterShell"):
            raise DoctorError("--nodes and --slurm-job need ClusterShell (pip install ClusterShell)") from None
        raise
    opts = SshOptions(fanout=args.fanout, timeout=args.timeout, connect_timeout=args.connect_timeout,
                      ssh_options=args.ssh_options, python=args.remote_python, interval=args.interval)
    return collect_nodes(nodes if isinstance(nodes, str) else ",".join(nodes), out_dir, opts)


def _directory(path: str, flag: str):
    from pathlib import Path

    from allreduce_doctor.errors import DoctorError

    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DoctorError(f"{flag} {path}: cannot create the folder ({err.strerror or err})") from None
    return Path(path)


def run(args) -> int:
    import tempfile

    from allreduce_doctor import __version__
    from allreduce_doctor.fleet.analyze import analyze
    from allreduce_doctor.fleet.fleet_diagnosis import fleet_diagnosis
    from allreduce_doctor.fleet.fleet_progress import ProgressBar
    from allreduce_doctor.fleet.sources import find_bundles
    from allreduce_doctor.output import write_output
    from allreduce_doctor.session import parse_answers
    from allreduce_doctor.status import verdict_exit

    _check(args)
    _check_tui(args)
    from allreduce_doctor.doctor import Doctor

    answers = parse_answers(args.answer, Doctor.load().runbooks.answers)
    per_node = _directory(args.per_node, "--per-node") if args.per_node else None
    with tempfile.TemporaryDirectory(prefix="allreduce-doctor-fleet-") as tmp:
        if args.snapshots:
            bundles, unreachable = find_bundles(args.snapshots), {}
            source = f"bundles in {args.snapshots}"
        else:
            if args.slurm_job:
                from allreduce_doctor.fleet.slurm import job_nodes

                nodes = job_nodes(args.slurm_job)
                source = f"Slurm job {args.slurm_job}"
            else:
                nodes, source = args.nodes, f"--nodes {args.nodes}"
            out_dir = _directory(args.keep_bundles, "--keep-bundles") if args.keep_bundles else _directory(tmp, "temporary")
            collected = _collect(args, nodes, out_dir)
            bundles, unreachable = collected.bundles, collected.failed
        bar = ProgressBar("diagnosing", len(bundles))
        try:
            results, digests = analyze(bundles, args.fabric, answers, args.jobs or None, per_node, bar.update)
        finally:
            bar.close()
        n = len(results) + len(unreachable)
        data = fleet_diagnosis(results, unreachable, {"source": f"fleet of {n} node{'s' if n != 1 else ''}, {source}",
                                                      "tool_version": __version__, **digests})
        if args.tui:  # inside the with: a node's diagnosis is read from its bundle, which may be in tmp
            from allreduce_doctor.tui.app import run_fleet

            return run_fleet(data, {node: bundles[node] for node in results if node in bundles}, args.fabric, answers)
    if args.export:
        from allreduce_doctor.export import render_export

        write_output(render_export(data, args.export, "fleet diagnosis"), args.output)
    else:
        from allreduce_doctor.fleet.fleet_report import render_fleet

        write_output(render_fleet(data, args.format), args.output)
    return verdict_exit(data["verdict"])
