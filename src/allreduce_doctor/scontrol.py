"""scontrol, run like every command: through a Host (argv list, timeout, bounded output).

One wording per failure, shared by the fleet's job lookup and the health check's drain/resume.
"""

from __future__ import annotations

from allreduce_doctor.errors import DoctorError


class ScontrolError(DoctorError):
    """scontrol is missing, failed or timed out; str() says which, in one line."""


def scontrol(host, args: list[str], timeout: float, key: str) -> str:
    """stdout of `scontrol ARGS`, or ScontrolError."""
    result = host.run(["scontrol", *args], timeout, key)
    words = " ".join(args)
    if result.error == "not found":
        raise ScontrolError("scontrol is not on PATH (run it where Slurm's client tools are)")
    if result.timed_out:
        raise ScontrolError(f"scontrol {words} timed out after {timeout:.3g}s")
    if not result.ok:
        detail = " ".join((result.stderr or result.stdout or result.error).split()) or f"exit {result.rc}"
        raise ScontrolError(f"scontrol {words} failed: {detail}")
    return result.stdout
