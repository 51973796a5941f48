"""Stopping a launcher the way its manual asks, before the group is killed.

At the cap, on the TUI's stop key or on Ctrl-C, a launcher (srun, mpirun) gets the chance to end
its remote tasks itself; an immediate SIGKILL leaves srun no time to cancel its step, and the
tasks live on until Slurm notices the lost srun. In turn, each after GRACE_S unless it exited:

1. SIGINT to its process group, as a terminal's Ctrl-C (termios INTR) would: srun with
   `--quit-on-interrupt` forwards it and terminates the step (Slurm src/srun/signals.c
   _handle_intr, logging "sending Ctrl-C to StepId=JOB.STEP"); mpirun "will attempt to kill the
   entire job by sending all processes in the job a SIGTERM" (Open MPI v5.0.10 mpirun(1),
   "Signal Propagation").
2. SIGTERM: srun forwards it to the tasks as SIGKILL (srun(1), --ignore-signals: "SIGTERM
   Forwarded as SIGKILL").
3. `scancel JOB.STEP` when the launcher named its step (scancel(1): job_id[.step_id]).
4. SIGKILL to what is left: the caller's sweep (hosts/live.py), as before.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable

GRACE_S = 5.0  # per stage; Slurm's own KillWait (slurm.conf, default 30 s) is the tasks' allowance
SCANCEL_TIMEOUT_S = 10.0
STEP_RE = re.compile(rb"StepId=(\d+)\.(\d+)")  # log.c's %ps: "StepId=JOB.STEP"


def step_named(said: bytes) -> str | None:
    """The last JOB.STEP srun named on its stderr, or None."""
    found = STEP_RE.findall(said)
    return f"{found[-1][0].decode()}.{found[-1][1].decode()}" if found else None


def stop_launcher(pgid: int, wait: Callable[[float], bool], said: Callable[[], bytes],
                  grace: float | None = None) -> list[str]:
    """Stages 1-3 above; `wait(seconds)` is True once the launcher exited, `said()` its stderr so far.
    The stages taken, in order ("SIGINT", "SIGTERM", "scancel 4242.3", "SIGKILL")."""
    from allreduce_doctor.hosts.live import run_bounded

    grace = GRACE_S if grace is None else grace
    taken: list[str] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return taken
        except PermissionError:
            pass  # a setuid member: the rest of the group was signalled
        taken.append(sig.name)
        if wait(grace):
            return taken
    step = step_named(said())
    if step is not None:
        taken.append(f"scancel {step}")
        run_bounded(["scancel", step], SCANCEL_TIMEOUT_S,
                    extra_env={k: v for k, v in os.environ.items() if k.startswith("SLURM_")})
        if wait(grace):
            return taken
    return [*taken, "SIGKILL"]
