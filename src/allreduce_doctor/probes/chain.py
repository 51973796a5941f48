"""A chained probe: commands run one after another, a later argv built from an earlier parsed value.

Each step is an ordinary command probe (argv list, no shell, its own timeout cut to the run's
deadline, the Host's output cap, recorded in a bundle under `<probe>.<step>/<instance>` so a
snapshot replays the chain exactly). A step's `take` binds fields of its parsed dict as
{variables} of the later steps; a bound value must be a plain token (never an option, never
blank), so nothing a device answers can add a flag such as `--reset` to a later argv. The first
step that fails ends the chain with its outcome; the last step's value is the probe's value, with
what the chain took under `via`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from allreduce_doctor.hosts.base import Host
from allreduce_doctor.observations import ERROR, MISSING, OK
from allreduce_doctor.probes.permission import NEEDS_ROOT

if TYPE_CHECKING:  # spec loads the derivations, which read what a chain took (VIA)
    from allreduce_doctor.probes.spec import ProbeSpec

_TOKEN = re.compile(r"[A-Za-z0-9_.:]+", re.ASCII)  # a LID, a port number, a GUID
VIA = "via"


def run_chain(spec: ProbeSpec, host: Host, item: dict, deadline: float | None, run_step: Callable):
    """run_step(step_spec, host, item, deadline) -> Outcome runs one command (execute._run_command)."""
    bound, taken = dict(item), {}
    out: Any = None  # run_step's Outcome: a chain has two or more steps (spec._chain)
    for step in spec.steps:
        out = run_step(step.command, host, bound, deadline)
        if out.status != OK:
            return _root_failure(spec, host, out)
        for var, name in step.take.items():
            value = out.value.get(name) if isinstance(out.value, dict) else None
            if value is None or not _TOKEN.fullmatch(str(value)):
                return _end(out, ERROR, f"{name} is {'absent' if value is None else repr(value)}: not a plain value to pass on")
            taken[var] = bound[var] = value
        for var, regex in step.expect.items():
            if not re.search(regex, str(taken[var])):
                return _end(out, MISSING, f"{step.otherwise or 'the chain cannot go on'} ({var} = {taken[var]})")
    value = dict(out.value) if isinstance(out.value, dict) else {"value": out.value}
    value[VIA] = taken
    out.value = value
    return out


def _end(out, status: str, reason: str):
    out.value, out.status, out.reason = None, status, reason
    return out


def _root_failure(spec: ProbeSpec, host: Host, out):
    """A root-only probe (`root: true`) failing for a user who is not root is missing for want of
    root: infiniband-diags open /dev/infiniband/umad*, root-only by default (rdma-core
    rdma-umad.rules sets no MODE), and say only "can't open UMAD port" (libibmad rpc.c)."""
    if spec.root and out.status == ERROR and not host.identity().is_root:
        out.status, out.reason = MISSING, f"{NEEDS_ROOT} ({out.reason})"
    return out
