"""Exit codes, the verdict words and their exit codes, and the one error handler at the edge.

Exit codes are a contract (README.md, `--help` epilogs): scripts and schedulers branch on them.
Every front end (the CLI, the terminal UI, fleet, export, the fleet's remote collector) maps
outcomes to codes through this module, so a code means the same thing everywhere.
"""

from __future__ import annotations

import os
import sys

from allreduce_doctor.errors import DoctorError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (7 ms of every --help)
if TYPE_CHECKING:
    from collections.abc import Callable

EXIT_HEALTHY = 0
EXIT_FAULT = 1
EXIT_BAD_INPUT = 2  # also argparse's usage-error code
EXIT_INCONCLUSIVE = 3
EXIT_NOT_APPLICABLE = 4  # nothing of NCCL's networking here (no GPUs, no RDMA): not healthy, not a fault
EXIT_INTERNAL = 70  # EX_SOFTWARE in sysexits.h: a bug, not the user's input
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for ^C

# The four verdicts a Diagnosis can carry (its JSON "verdict" field). healthy only when the
# checks that matter for this node ran and passed; not_applicable when the node has neither
# GPUs nor RDMA ports, so there is no NCCL network path to judge.
FAULT, HEALTHY, INCONCLUSIVE, NOT_APPLICABLE = "fault", "healthy", "inconclusive", "not_applicable"
VERDICTS = (FAULT, HEALTHY, INCONCLUSIVE, NOT_APPLICABLE)
VERDICT_EXIT = {HEALTHY: EXIT_HEALTHY, FAULT: EXIT_FAULT, INCONCLUSIVE: EXIT_INCONCLUSIVE,
                NOT_APPLICABLE: EXIT_NOT_APPLICABLE}
# The headline of each verdict, as every report and ticket words it (reports print it upper-case).
VERDICT_HEADLINE = {FAULT: "Fault found", HEALTHY: "Nothing found on this node", INCONCLUSIVE: "Inconclusive",
                    NOT_APPLICABLE: "Nothing to diagnose here"}
# Pasted text alone shows no node: its no-fault end (a hardware limit the text shows) says so.
EVIDENCE_HEALTHY_HEADLINE = "No fault in the pasted text"


def verdict_headline(verdict: str, source: str | None = None) -> str:
    """The verdict's headline for a diagnosis of `source` (the host kind: live, snapshot, evidence)."""
    if verdict == HEALTHY and source == "evidence":
        return EVIDENCE_HEALTHY_HEADLINE
    return VERDICT_HEADLINE.get(verdict, verdict)

# A step's badge: what its outcome means for the node, worded apart from an evidence row's read
# status (ok / missing / error: whether a fact could be read at all).
STEP_PASS, STEP_FAIL, STEP_UNKNOWN, STEP_NA = "pass", "fail", "unknown", "n.a."
STEP_BADGE = {STEP_PASS: "pass", STEP_FAIL: "FAIL", STEP_UNKNOWN: " ?? ", STEP_NA: "n.a."}
# How an evidence row's read status reads beside a step's badge.
READ_STATUS = {"ok": "read", "missing": "not read", "error": "read failed", "not_applicable": "no such hardware"}

# What every command that ends in a verdict says about its exit codes in --help (README.md: the table).
VERDICT_EXIT_HELP = (f"exit codes: {EXIT_HEALTHY} nothing found, {EXIT_FAULT} fault found, {EXIT_BAD_INPUT} bad input, "
                     f"{EXIT_INCONCLUSIVE} inconclusive, {EXIT_NOT_APPLICABLE} nothing to diagnose here "
                     f"(no GPUs and no RDMA ports), {EXIT_INTERNAL} internal error.")
TOOL_EXIT_HELP = f"exit codes: {EXIT_HEALTHY} done, {EXIT_BAD_INPUT} bad input, {EXIT_INTERNAL} internal error."

DEBUG_ENV = "ALLREDUCE_DOCTOR_DEBUG"  # set: internal errors raise with their traceback
PROG = "allreduce-doctor"


def verdict_exit(verdict: object) -> int:
    """The exit code of a verdict; anything that is not a known verdict is inconclusive."""
    return VERDICT_EXIT.get(verdict, EXIT_INCONCLUSIVE) if isinstance(verdict, str) else EXIT_INCONCLUSIVE


def error_exit(err: BaseException) -> int:
    """The exit code of an error that stopped a command: the user's input, or a bug."""
    return EXIT_BAD_INPUT if isinstance(err, DoctorError) else EXIT_INTERNAL


def error_line(err: BaseException) -> str:
    """The one line printed for an error that stopped a command."""
    if isinstance(err, DoctorError):
        return f"{PROG}: error: {' '.join(str(err).split())}"
    return (f"{PROG}: internal error: {type(err).__name__}: {err} "
            "(this is a bug; please report it with the command you ran)")


def run_guarded(fn: Callable[[], int]) -> int:
    """Run a command; turn whatever stops it into one line on stderr and its exit code."""
    try:
        return fn()
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `... | head`: the reader left; nothing more to say
        return EXIT_HEALTHY
    except Exception as err:  # noqa: BLE001 - the one place an error becomes a message, not a traceback
        if os.environ.get(DEBUG_ENV) and not isinstance(err, DoctorError):
            raise
        print(error_line(err), file=sys.stderr)
        return error_exit(err)

