"""`diagnose --format csv`: the pasted nccl-tests table's busbw curve beside the ceiling, one row per size.

The ceiling and its resource are the Bandwidth line's (busbw.summary, written once); each size is judged by the
same rule (ceiling.verdict_of). Sizes below evidence/tests_table.LARGE (32 MiB: NCCL's latency term is not small
there, its comment cites tuning.cc) are `latency_bound`, never judged by bandwidth. A ceiling that is not known is
an empty cell and the verdict `unknown`, never 0.
"""

from __future__ import annotations

import csv
import io

from allreduce_doctor.busbw import summary
from allreduce_doctor.ceiling import verdict_of
from allreduce_doctor.errors import DoctorError
from allreduce_doctor.evidence.tests_table import LARGE
from allreduce_doctor.observations import Observations

HEADER = ("size_bytes", "collective", "algbw_gbps", "busbw_gbps", "ceiling_gbps", "resource", "verdict")
NO_TABLE = ("--format csv writes the busbw curve of a pasted nccl-tests table, and the evidence holds none: pass "
            "all_reduce_perf output with --evidence FILE")


def _ceiling(observations: Observations) -> tuple[float | None, float | None, str | None]:
    """(reachable ceiling, hardware bound, resource) as the Bandwidth line decides them; None where not known."""
    bw = summary(observations) or {}
    if bw.get("hardware") in (None, "unknown"):
        return None, (bw.get("ceiling") or {}).get("bound_gbs"), None
    ceiling = bw.get("ceiling") or {}
    return ceiling.get("ceiling_gbs"), ceiling.get("bound_gbs"), bw.get("limit")


def rows(observations: Observations) -> list[list]:
    tests = observations.get("log.tests")
    run = (tests.value or {}).get("main") if tests.ok and isinstance(tests.value, dict) else None
    if not run or not run.get("curve"):
        raise DoctorError(NO_TABLE)
    if run.get("unjudged"):  # another tool's table, or several runs: the same one sentence as the report's
        raise DoctorError(f"--format csv: {run['unjudged']}")
    ceiling, bound, resource = _ceiling(observations)
    out = []
    for size, algbw, busbw in run["curve"]:
        if size < LARGE:
            verdict = "latency_bound"
        else:
            verdict = verdict_of(busbw, ceiling, bound)[0]
        out.append([size, run.get("collective") or "", f"{algbw:g}", f"{busbw:g}",
                    "" if ceiling is None else f"{ceiling:g}", resource or "", verdict])
    return out


def render_csv(observations: Observations) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(rows(observations))
    return buf.getvalue()
