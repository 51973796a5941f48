"""The stress `validate` will run: which nodes, which benchmarks, through which launcher.

Nothing here starts anything. The plan is plain data (to_dict/from_dict) so the record keeps it
and a replay judges against exactly what ran. The launcher is always the site's own: `srun`
inside a Slurm allocation, `mpirun` with a hostfile, or a template the user gives.
"""

from __future__ import annotations

import os
import re
import shlex
import string
from dataclasses import asdict, dataclass, field
from pathlib import Path

from allreduce_doctor.errors import DoctorError

# nccl-tests parses sizes with K/M/G suffixes in powers of 1024 (src/common.cu, parsesize()).
SIZE_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
SIZE_RE = re.compile(r"(\d+)([KMG]?)", re.IGNORECASE)
# nccl-tests defaults (src/common.cu): 20 timed iterations, 1 warm-up; each size runs out-of-place
# and in-place, so every size moves its bytes (20 + 1) x 2 times.
ITERS, WARMUP, PLACEMENTS = 20, 1, 2
BENCHMARKS = ("all_reduce_perf", "alltoall_perf")
INCAST_TOOL = "ib_write_bw"
INCAST_BASE_PORT = 18515  # perftest's default port; each sender gets its own port on the receiver
PLACEHOLDERS = ("nodes", "nodelist", "ranks_per_node", "ntasks", "hostfile")


def parse_size(text: str, flag: str) -> int:
    m = SIZE_RE.fullmatch(text.strip())
    if not m or int(m.group(1)) == 0:
        raise DoctorError(f"{flag} {text!r}: expected a size such as 1M or 8G (K, M, G: powers of 1024)")
    return int(m.group(1)) * SIZE_SUFFIX[m.group(2).upper()]


def sizes(min_bytes: int, max_bytes: int, factor: int) -> list[int]:
    """The message sizes nccl-tests steps through with -b/-e/-f."""
    out: list[int] = []
    size = min_bytes
    while size <= max_bytes and len(out) < 64:
        out.append(size)
        size *= factor
    return out


@dataclass
class Step:
    name: str  # all_reduce_perf | alltoall_perf | incast
    argv: list[str]  # the launcher's command line, benchmark included
    purpose: str


@dataclass
class Plan:
    nodes: list[str]
    source: str  # where the nodes came from, in words
    launcher: str  # srun | mpirun | template
    ranks_per_node: int
    min_bytes: int
    max_bytes: int
    factor: int
    interval: float
    max_seconds: float
    steps: list[Step] = field(default_factory=list)
    incast_receivers: list[str] = field(default_factory=list)
    launch_notes: list[str] = field(default_factory=list)  # where the launcher's options came from

    def bytes_moved(self) -> int:
        """Bytes all ranks send over the whole run: ring all-reduce sends 2(n-1)/n of the buffer per
        rank, all-to-all (n-1)/n (nccl-tests doc/PERFORMANCE.md); NVLink traffic included."""
        n = len(self.nodes) * self.ranks_per_node
        per_round = sum(sizes(self.min_bytes, self.max_bytes, self.factor)) * (ITERS + WARMUP) * PLACEMENTS
        factors = {"all_reduce_perf": 2 * (n - 1), "alltoall_perf": n - 1}
        return sum(per_round * factors.get(s.name, 0) for s in self.steps)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Plan:
        steps = [Step(**s) for s in data.get("steps") or []]
        return cls(**{**data, "steps": steps})


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"


def render_plan(plan: Plan) -> str:
    lines = [f"validate plan: {len(plan.nodes)} nodes ({plan.source}), {plan.ranks_per_node} ranks per node, "
             f"launcher {plan.launcher}",
             f"  sizes {human_bytes(plan.min_bytes)} to {human_bytes(plan.max_bytes)}, x{plan.factor} per step",
             f"  counters sampled on every node every {plan.interval:g}s (fleet fan-out, read-only)",
             f"  wall-clock cap {plan.max_seconds:g}s; about {human_bytes(plan.bytes_moved())} sent by all ranks "
             "(NVLink included)"]
    lines += [f"  {note}" for note in plan.launch_notes]
    for step in plan.steps:
        lines.append(f"  {step.name}: {step.purpose}")
        lines.append(f"    {shlex.join(step.argv)}")
    return "\n".join(lines) + "\n"


def find_binary(name: str, directory: str | None) -> str:
    """The benchmark's path: DIR/build/NAME or DIR/NAME with --nccl-tests DIR, else NAME on PATH.
    The same path must exist on every node (a shared file system), as with any srun."""
    import shutil

    if directory:
        for candidate in (Path(directory) / "build" / name, Path(directory) / name):
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate.resolve())
        raise DoctorError(f"--nccl-tests {directory}: no executable {name} there (nor in {directory}/build)")
    found = shutil.which(name)
    if found is None:
        raise DoctorError(f"{name} is not on PATH: build nccl-tests (or perftest) and give --nccl-tests DIR")
    return found


def check_template(template: str) -> list[str]:
    """The template's words; DoctorError for a placeholder the plan does not fill."""
    try:
        words = shlex.split(template)
    except ValueError as err:
        raise DoctorError(f"--launcher {template!r}: {err}") from None
    if not words:
        raise DoctorError("--launcher: empty template; e.g. --launcher 'srun --mpi=pmix -N {nodes} --ntasks-per-node {ranks_per_node}'")
    for word in words:
        for _, name, _, _ in string.Formatter().parse(word):
            if name is not None and name not in PLACEHOLDERS:
                raise DoctorError(f"--launcher: unknown placeholder {{{name}}}; use {', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
    return words


def launcher_prefix(kind: str, template: str | None, nodes: list[str], ranks: int, hostfile: str,
                    nodelist: str, jobid: str | None = None, site=None, gpus: int = 0,
                    environ: dict[str, str] | None = None) -> list[str]:
    """The launcher's words before the benchmark, `ranks` tasks per node on every node, `gpus` GPUs
    per node for the step (0: none, the incast's perftest); srun's and mpirun's options: launchers.py."""
    from allreduce_doctor.validate.launchers import SrunSite, mpirun_prefix, srun_prefix

    values = {"nodes": len(nodes), "nodelist": nodelist, "ranks_per_node": ranks, "ntasks": len(nodes) * ranks,
              "hostfile": hostfile}
    if kind == "template":
        return [word.format(**values) for word in check_template(template or "")]
    if kind == "mpirun":
        return mpirun_prefix(hostfile, len(nodes) * ranks, ranks, dict(os.environ) if environ is None else environ)
    return srun_prefix(site or SrunSite(), nodelist, len(nodes), ranks, gpus, jobid)


def benchmark_args(binary: str, plan: Plan) -> list[str]:
    # -g 1: one GPU per rank, the ranks being one per GPU (nccl-tests README, "MPI" section)
    return [binary, "-b", str(plan.min_bytes), "-e", str(plan.max_bytes), "-f", str(plan.factor), "-g", "1"]


def incast_steps(prefix_for, receivers: list[str], nodes: list[str], binary: str, seconds: int) -> list[Step]:
    """Many-to-one ib_write_bw: on each receiver one server per sender (perftest serves one
    client per port), every other node a client aimed at it."""
    steps = []
    for receiver in receivers:
        senders = [n for n in nodes if n != receiver]
        for i, sender in enumerate(senders):
            port = str(INCAST_BASE_PORT + i)
            common = [binary, "--report_gbits", "-D", str(seconds), "-p", port]
            steps.append(Step("incast", prefix_for([receiver]) + common,
                              f"server on {receiver} for {sender} (port {port})"))
            steps.append(Step("incast", prefix_for([sender]) + common + [receiver],
                              f"client {sender} -> {receiver}"))
    return steps
