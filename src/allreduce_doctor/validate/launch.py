"""Run the plan's steps through the site's launcher, one at a time, inside the wall-clock cap.

Each step runs through hosts/live.py's run_bounded (argv list, no shell, its own process group,
bounded output). At the cap, on the TUI's stop or on Ctrl-C (KeyboardInterrupt unwinds through
it) the launcher is stopped as its manual asks (hosts/stopping.py: SIGINT, SIGTERM, `scancel
JOB.STEP`, each after a grace period) and then its whole process group is killed; the stages taken
are kept in the record. Incast pairs (a server and its client) run side by side, each in its own
thread.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from allreduce_doctor.validate.plan import Step

STEPS_DIR = "steps"
STOPPED = "stopped by the user"
# What a launcher needs from the caller's environment: Slurm's allocation (srun runs inside it),
# Open MPI / PMIx wiring, and the library paths the benchmarks link against.
LAUNCHER_ENV_PREFIXES = ("SLURM_", "OMPI_", "PMIX_", "PMI_", "PRTE_", "UCX_", "NCCL_", "CUDA_", "HWLOC_")
LAUNCHER_ENV_NAMES = ("LD_LIBRARY_PATH", "HOME", "USER", "LOGNAME")


@dataclass
class StepResult:
    name: str
    argv: list[str]
    rc: int | None
    timed_out: bool
    seconds: float
    output: str  # the step's stdout and stderr, as a file relative to the record
    error: str = ""  # could not start: "not found", "permission denied"
    stopping: list[str] = field(default_factory=list)  # "SIGINT", "SIGTERM", "scancel 4242.3", "SIGKILL"

    def to_dict(self) -> dict:
        return asdict(self)


def launcher_env(environ: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k.startswith(LAUNCHER_ENV_PREFIXES) or k in LAUNCHER_ENV_NAMES}


def run_step(step: Step, index: int, root: Path, timeout: float, on_output=None, stop=None) -> StepResult:
    """One step; on_output(index, name, bytes) sees its stdout as it arrives (the TUI's busbw per
    size); a set `stop` (threading.Event: the TUI's stop key) kills it as the cap would."""
    from allreduce_doctor.hosts.live import run_bounded
    from allreduce_doctor.hosts.stopping import stop_launcher

    began = time.monotonic()
    stages: list[str] = []
    result = run_bounded(list(step.argv), max(timeout, 0.1), extra_env=launcher_env(dict(os.environ)),
                         on_stdout=None if on_output is None else lambda data: on_output(index, step.name, data),
                         stop=stop, on_stop=lambda pid, wait, said: stages.extend(stop_launcher(pid, wait, said)))
    name = f"{index:02d}-{step.name}.out"
    folder = root / STEPS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(result.stdout + ("\n" + result.stderr if result.stderr else ""), encoding="utf-8")
    error = STOPPED if stop is not None and stop.is_set() and result.rc is None else result.error
    return StepResult(step.name, list(step.argv), result.rc, result.timed_out and not error, round(time.monotonic() - began, 3),
                      f"{STEPS_DIR}/{name}", error, stages)


def run_steps(steps: list[Step], root: Path, max_seconds: float, on_step=None, on_output=None, stop=None) -> list[StepResult]:
    """Every step in order (incast pairs together), each given what is left of `max_seconds`;
    after `stop` is set, the rest are not started."""
    deadline = time.monotonic() + max_seconds
    results: list[StepResult] = []
    groups: list[list[tuple[int, Step]]] = []
    for index, step in enumerate(steps):
        if step.name == "incast" and groups and groups[-1][0][1].name == "incast":
            groups[-1].append((index, step))
        else:
            groups.append([(index, step)])
    for group in groups:
        left = deadline - time.monotonic()
        if stop is not None and stop.is_set():
            results += [StepResult(s.name, list(s.argv), None, False, 0.0, "", f"not started: {STOPPED}") for _, s in group]
            continue
        if left <= 0:
            results += [StepResult(s.name, list(s.argv), None, True, 0.0, "", "not started: the wall-clock cap was reached")
                        for _, s in group]
            continue
        if on_step is not None:
            on_step(group[0][1].name)
        if len(group) == 1:
            results.append(run_step(group[0][1], group[0][0], root, left, on_output, stop))
            continue
        done: dict[int, StepResult] = {}
        threads = [threading.Thread(target=lambda i=i, s=s, done=done, left=left: done.__setitem__(
                                        i, run_step(s, i, root, left, on_output, stop)),
                                    daemon=True)
                   for i, s in group]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        results += [done[i] for i, _ in group if i in done]
    return results
