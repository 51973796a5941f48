"""`allreduce-doctor validate`: prove the fabric under load (the only command that creates traffic).

Only argparse at the top: the work is imported inside run(), so `--help` stays fast.
"""

from __future__ import annotations

import argparse


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "validate", description="Run all_reduce_perf and alltoall_perf across all the nodes at once (optionally a many-to-one "
        "ib_write_bw incast) through the site's launcher, sample every node's counters while they run (the fleet's "
        "ClusterShell fan-out, read-only), and judge: busbw per size against NICs x line rate, and per node loss, "
        "pause cascade, DCQCN at work, InfiniBand credit back-pressure, stragglers. Everything is recorded in a "
        "folder that `diagnose --snapshot DIR` and `fleet --snapshots DIR` replay.",
        epilog="exit codes: 0 nothing found, 1 fault found, 2 bad input, 3 inconclusive, 130 interrupted.")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--nodes", metavar="NODESET", help="ClusterShell node set, e.g. gpu[01-04] (default: the current allocation)")
    where.add_argument("--slurm-job", metavar="ID", help="the nodes of this Slurm job (scontrol show hostnames)")
    launch = p.add_argument_group("launching (always the site's launcher)")
    launch.add_argument("--launcher", metavar="TEMPLATE", help="launcher words before the benchmark, with {nodes}, "
                        "{nodelist}, {ranks_per_node}, {ntasks}, {hostfile}; e.g. 'srun --mpi=pmix -N {nodes} "
                        "--ntasks-per-node {ranks_per_node}' (default: srun inside an allocation, mpirun with --hostfile)")
    launch.add_argument("--mpi", metavar="TYPE", help="srun's --mpi (default: the site's MpiDefault from scontrol "
                        "show config, pmix where that is none or unknown)")
    launch.add_argument("--gpu-request", choices=("gpus-per-node", "gres", "none"), help="how each srun step asks for "
                        "its GPUs: --gpus-per-node=N, --gres=gpu:N or not at all (default gpus-per-node, none where "
                        "GresTypes has no gpu)")
    launch.add_argument("--hostfile", metavar="FILE", help="launch with mpirun and this hostfile (its nodes, without --nodes)")
    launch.add_argument("--nccl-tests", metavar="DIR", help="nccl-tests folder (DIR or DIR/build); default: PATH")
    launch.add_argument("--perftest", metavar="DIR", help="folder holding ib_write_bw for --incast; default: PATH")
    launch.add_argument("--gpus-per-node", type=int, default=0, metavar="N", help="ranks per node (default: the GPUs found)")
    launch.add_argument("--min-bytes", default="1M", metavar="SIZE", help="smallest message (default 1M)")
    launch.add_argument("--max-bytes", default="8G", metavar="SIZE", help="largest message (default 8G)")
    launch.add_argument("--factor", type=int, default=2, metavar="F", help="size step factor (default 2)")
    launch.add_argument("--benchmarks", default="all_reduce_perf,alltoall_perf", metavar="LIST",
                        help="nccl-tests binaries to run in turn (default all_reduce_perf,alltoall_perf)")
    launch.add_argument("--incast", action="append", default=[], metavar="NODE",
                        help="also run many-to-one ib_write_bw at NODE from every other node (repeatable)")
    launch.add_argument("--incast-seconds", type=int, default=20, metavar="S", help="incast duration (default 20)")
    watch = p.add_argument_group("watching")
    watch.add_argument("--interval", type=float, default=5.0, metavar="SECONDS", help="seconds between rounds (default 5)")
    watch.add_argument("--fanout", type=int, default=64, metavar="N", help="nodes sampled at once (default 64)")
    watch.add_argument("--ssh-options", default="", metavar="OPTIONS", help="extra ssh arguments for the sampling")
    safety = p.add_argument_group("safety")
    safety.add_argument("--dry-run", action="store_true", help="print the plan (commands, nodes, cap, bytes) and run nothing")
    safety.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    safety.add_argument("--max-seconds", type=float, default=300.0, metavar="S", help="wall-clock cap of the benchmarks (default 300)")
    safety.add_argument("--allow-busy", action="store_true", help="run even where another job's NCCL processes are found")
    p.add_argument("--tui", action="store_true", help="in the terminal UI: the plan first, started only when you start it "
                   "there; then every node's counter rates live, busbw per size as it arrives, and the diagnosis")
    p.add_argument("--record", metavar="DIR", help="record folder (default ./allreduce-doctor-validate-<UTC time>)")
    p.add_argument("--format", choices=("text", "json", "markdown", "csv"), default="text",
                   help="report format (default text); csv: each benchmark's busbw per size against NICs x line rate")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--export", metavar="FORMAT", help="write a ticket document in FORMAT instead of the report")
    return p


def report(data: dict, fmt: str, output: str | None, export: str | None, root=None) -> int:
    """Print a validate Diagnosis (live or replayed) like any other; the exit code of its verdict.
    csv: busbw per size from the record at `root` (validate/size_table.py)."""
    from allreduce_doctor.errors import DoctorError
    from allreduce_doctor.output import write_output
    from allreduce_doctor.status import verdict_exit

    if fmt == "csv" and root is None:  # validate judges its sizes against the NICs (validate/judge.py)
        raise DoctorError("--format csv writes a pasted nccl-tests table's curve; a validate record's run is not "
                          "written as CSV: use --format json")
    if fmt == "csv" and not export:
        from allreduce_doctor.validate.size_table import render_size_table

        write_output(render_size_table(root, data), output)
    elif export:
        from allreduce_doctor.export import render_export

        write_output(render_export(data, export, "validate diagnosis"), output)
    else:
        from allreduce_doctor.report import render

        write_output(render(data, fmt if fmt in ("text", "json", "markdown") else "text"), output)
    return verdict_exit(data.get("verdict"))


def replay_report(path: str, fmt: str | None, output: str | None, export: str | None) -> int:
    """`diagnose --snapshot DIR` and `fleet --snapshots DIR` on a validate record."""
    from allreduce_doctor.validate.record import replay

    return report(replay(path), fmt or "text", output, export, path)


def run(args) -> int:
    from allreduce_doctor.validate.plan import render_plan
    from allreduce_doctor.validate.run import confirm, plan_from_args, record_folder, run_validate, sampler_from_args

    if args.tui and not args.dry_run:
        return _run_tui(args)
    make_plan, nodes = plan_from_args(args)
    if args.dry_run:
        print(render_plan(make_plan(args.gpus_per_node or None, None)), end="")
        return 0
    confirm(args, nodes)
    root = record_folder(args.record)
    data = run_validate(make_plan, sampler_from_args(args, nodes), root, args.allow_busy, args.interval)
    return report(data, args.format, args.output, args.export, root)


def _run_tui(args) -> int:
    """The plan on screen; the run starts only on the user's key there, --yes or not."""
    import sys

    from allreduce_doctor.errors import DoctorError

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise DoctorError("--tui needs a terminal; without it validate prints a progress line and the report")
    from allreduce_doctor.tui.app import run_validate as run_in_tui
    from allreduce_doctor.validate.tui_run import job_from_args

    return run_in_tui(job_from_args(args))
