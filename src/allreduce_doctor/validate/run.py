"""One validate run: the plan from the command line, the idle round, the benchmarks under watch,
the record, and its judgement (always through record.replay, so live and replay agree)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from allreduce_doctor import __version__
from allreduce_doctor.errors import DoctorError
from allreduce_doctor.validate import plan as P

DEFAULT_RANKS = 8  # what a dry run shows when --gpus-per-node is not given (a real run asks the nodes)
HOSTFILE = "hostfile"


def _check(args) -> None:
    checks = [(args.factor, 2, 64, "--factor", ""), (args.interval, 0.5, 600, "--interval", " seconds"),
              (args.max_seconds, 10, 86400, "--max-seconds", " seconds"), (args.gpus_per_node, 0, 64, "--gpus-per-node", ""),
              (args.fanout, 1, 10000, "--fanout", " nodes"), (args.incast_seconds, 1, 3600, "--incast-seconds", " seconds")]
    for value, low, high, flag, unit in checks:
        if not low <= value <= high:
            raise DoctorError(f"{flag} {value:g}: expected {low:g} to {high:g}{unit}")


def _hostfile_nodes(path: str) -> list[str]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise DoctorError(f"--hostfile {path}: cannot read it ({err.strerror or err})") from None
    nodes = [line.split()[0] for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not nodes:
        raise DoctorError(f"--hostfile {path}: no hosts in it")
    return list(dict.fromkeys(nodes))


def resolve_nodes(args) -> tuple[list[str], str]:
    from allreduce_doctor.fleet.ssh_collect import _nodeset

    if args.nodes:
        return list(_nodeset(args.nodes)), f"--nodes {args.nodes}"
    if args.slurm_job:
        from allreduce_doctor.fleet.slurm import job_nodes

        return job_nodes(args.slurm_job), f"Slurm job {args.slurm_job}"
    if args.hostfile:
        return _hostfile_nodes(args.hostfile), f"--hostfile {args.hostfile}"
    allocation = os.environ.get("SLURM_JOB_NODELIST")
    if allocation:
        return list(_nodeset(allocation)), f"this allocation (SLURM_JOB_ID {os.environ.get('SLURM_JOB_ID', '?')})"
    raise DoctorError("no nodes: give --nodes NODESET, --slurm-job ID or --hostfile FILE, or run inside a Slurm allocation")


def _binary(name: str, directory: str | None, dry_run: bool) -> str:
    try:
        return P.find_binary(name, directory)
    except DoctorError:
        if dry_run:
            return name  # the plan still shows what would run; a real run stops here
        raise


def plan_from_args(args) -> tuple[Callable[[int | None, Path | None], P.Plan], list[str]]:
    """(make_plan(ranks_per_node, record_root), nodes): the plan waits for the GPUs the nodes report."""
    _check(args)
    nodes, source = resolve_nodes(args)
    benchmarks = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    unknown = [b for b in benchmarks if b not in P.BENCHMARKS]
    if unknown or not benchmarks:
        raise DoctorError(f"--benchmarks {args.benchmarks!r}: choose from {', '.join(P.BENCHMARKS)}")
    for receiver in args.incast:
        if receiver not in nodes:
            raise DoctorError(f"--incast {receiver}: not one of the nodes ({', '.join(nodes[:8])})")
    if args.incast and len(nodes) < 2:
        raise DoctorError("--incast needs at least two nodes")
    low, high = P.parse_size(args.min_bytes, "--min-bytes"), P.parse_size(args.max_bytes, "--max-bytes")
    if low > high:
        raise DoctorError(f"--min-bytes {args.min_bytes} is larger than --max-bytes {args.max_bytes}")
    kind = "template" if args.launcher else "mpirun" if args.hostfile else "srun"
    if args.launcher:
        P.check_template(args.launcher)
    if kind == "srun" and not args.dry_run and not (args.slurm_job or os.environ.get("SLURM_JOB_ID")):
        raise DoctorError("srun runs inside an allocation: start one (salloc -N ...), or give --hostfile FILE (mpirun) "
                          "or --launcher TEMPLATE")
    site = None
    if kind == "srun":
        from allreduce_doctor.hosts.live import LiveHost
        from allreduce_doctor.validate.launchers import srun_site

        site = srun_site(args.mpi, args.gpu_request, LiveHost())
    binaries = {b: _binary(b, args.nccl_tests, args.dry_run) for b in benchmarks}
    perftest = _binary(P.INCAST_TOOL, args.perftest, args.dry_run) if args.incast else ""
    nodelist = args.nodes or ",".join(nodes)

    def make_plan(ranks: int | None, root: Path | None) -> P.Plan:
        ranks = ranks or DEFAULT_RANKS
        hostfile = args.hostfile or str((root or Path("<record>")) / HOSTFILE)
        plan = P.Plan(nodes, source, kind, ranks, low, high, args.factor, args.interval, args.max_seconds,
                      incast_receivers=list(args.incast), launch_notes=list(site.notes) if site else [])

        def prefix(on: list[str], per_node: int = ranks, gpus: int = ranks) -> list[str]:
            return P.launcher_prefix(kind, args.launcher, on, per_node, hostfile, ",".join(on) if on != nodes else nodelist,
                                     args.slurm_job, site, gpus)

        plan.steps = [P.Step(b, prefix(nodes) + P.benchmark_args(binaries[b], plan),
                             f"every rank of every node at once, {ranks} per node") for b in benchmarks]
        plan.steps += P.incast_steps(lambda on: prefix(on, 1, 0), args.incast, nodes, perftest, args.incast_seconds)
        return plan
    return make_plan, nodes


def confirm(args, nodes: list[str]) -> None:
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise DoctorError("validate drives traffic over the fabric: confirm with --yes (see the plan with --dry-run)")
    answer = input(f"validate will run nccl-tests across {len(nodes)} nodes for at most {args.max_seconds:g}s. Go? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise DoctorError("not confirmed: nothing was run")


def record_folder(path: str | None) -> Path:
    root = Path(path or f"allreduce-doctor-validate-{datetime.now(UTC):%Y%m%dT%H%M%SZ}")
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise DoctorError(f"--record {root}: already exists and is not an empty folder")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DoctorError(f"--record {root}: cannot create the folder ({err.strerror or err})") from None
    return root


def sampler_from_args(args, nodes: list[str]):
    from allreduce_doctor.validate.counter_rounds import FleetSampler

    return FleetSampler(nodes, interval=1.0, ssh_options=args.ssh_options, fanout=args.fanout)


def _baseline(root: Path, first, allow_busy: bool) -> int | None:
    """Refuse what the idle round shows unfit; the GPUs per node the nodes report."""
    from allreduce_doctor.doctor import Doctor
    from allreduce_doctor.fleet.fleet_diagnosis import listed
    from allreduce_doctor.validate.record import read_round

    figures, unreadable = read_round(root, first.bundles, Doctor.load())
    missing = {**first.failed, **unreadable}
    if missing:
        raise DoctorError(f"{len(missing)} nodes gave no idle sample, so they cannot be watched: "
                          + "; ".join(f"{n}: {w}" for n, w in list(missing.items())[:4]))
    busy = [n for n, f in figures.items() if f["job_found"]]
    if busy and not allow_busy:
        raise DoctorError(f"{listed(busy)} already run{'s' if len(busy) == 1 else ''} an NCCL job: validate would "
                          "disturb it and be disturbed by it; drain the nodes, or give --allow-busy")
    gpus = sorted({f["gpus"] for f in figures.values() if f.get("gpus")})
    return gpus[0] if gpus else None


def run_validate(make_plan, sampler, root: Path, allow_busy: bool, interval: float, ranks: int | None = None,
                 on_round=None, on_output=None, stop=None) -> dict:
    """Sample idle, launch under watch, record, judge. Ctrl-C: the launcher's group is killed, the
    record is written (marked interrupted) and KeyboardInterrupt goes on to the caller. The TUI
    sees each benchmark's output as it arrives (on_output) and stops the run with `stop` (an
    Event): the launcher's group is killed, the record marked interrupted and judged."""
    from allreduce_doctor.validate.counter_rounds import Watch, progress_line
    from allreduce_doctor.validate.launch import run_steps
    from allreduce_doctor.validate.record import replay, write_record

    watch = Watch(sampler, root, interval, on_round)
    first = watch.take()
    plan = make_plan(ranks or _baseline(root, first, allow_busy), root)
    watch.on_round = on_round or progress_line(plan.max_seconds, watch.begun)  # headless: a line on stderr
    # {hostfile} in a template names this one; with --hostfile it only documents the nodes
    (root / HOSTFILE).write_text("".join(f"{n} slots={plan.ranks_per_node}\n" for n in plan.nodes), encoding="utf-8")
    started = datetime.now(UTC).isoformat(timespec="seconds")
    results, interrupted = [], True
    watch.step = plan.steps[0].name
    watch.start()
    try:
        results = run_steps(plan.steps, root, plan.max_seconds, on_step=lambda name: setattr(watch, "step", name),
                            on_output=on_output, stop=stop)
        interrupted = stop is not None and stop.is_set()
    finally:
        watch.stop()
        if on_round is None and sys.stderr.isatty():  # the progress line's end (never under the TUI)
            sys.stderr.write("\r\033[K")
        write_record(root, {"tool_version": __version__, "started_at": started, "interrupted": interrupted,
                            "plan": plan.to_dict(), "steps": [r.to_dict() for r in results],
                            "rounds": [vars(r) for r in watch.rounds]})
    if watch.error is not None:
        raise DoctorError(f"the watch stopped: {type(watch.error).__name__}: {watch.error}")
    return replay(root)
