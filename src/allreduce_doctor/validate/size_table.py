"""`validate --format csv` (and `diagnose --snapshot RECORD --format csv`): each benchmark's busbw
per size from the record, against NICs x line rate, one row per size (RFC 4180 CSV).

The figures are the judge's own (validate/judge.py bandwidth): the record's outputs read by the
same nccl-tests parser (its curve: every size, the better of out-of-place and in-place), the
expected figure the one the validate.busbw step states. Sizes below evidence/tests_table.LARGE (32 MiB: NCCL's
latency term is not small there) are `latency_bound`, never judged by bandwidth, as in
`diagnose --format csv`. An unknown expected figure is an empty cell and the verdict
`unmeasured`, never 0.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from allreduce_doctor.domain import busbw_verdict
from allreduce_doctor.evidence.tests_table import LARGE

HEADER = ("benchmark", "size_bytes", "algbw_gbps", "busbw_gbps", "expected_gbps", "ratio", "verdict")


def _expected(data: dict) -> float | None:
    step = next((s for s in data.get("path") or [] if s.get("node") == "validate.busbw"), None)
    verdicts = (step or {}).get("value") or {}
    found = [float(v["expected_gbs"]) for v in verdicts.values() if isinstance(v, dict) and v.get("expected_gbs")]
    return found[0] if found else None


def rows(root: Path, data: dict) -> list[list]:
    from allreduce_doctor.validate.outputs import nccl_tests_run
    from allreduce_doctor.validate.record import load_record, read_outputs

    record = load_record(Path(root))
    outputs = read_outputs(Path(root), record["steps"])
    expected = _expected(data)
    out = []
    for index, step in enumerate(record["steps"]):
        if step.get("name") == "incast":
            continue
        run = nccl_tests_run(outputs.get(index, ""), step.get("output") or step.get("name"))
        for size, algbw, busbw in (run or {}).get("curve") or []:  # every size, its better placement
            ratio, verdict = busbw_verdict(busbw, expected)
            out.append([step["name"], size, f"{algbw:g}", f"{busbw:g}", "" if expected is None else f"{expected:g}",
                        "" if ratio is None else f"{ratio:g}", "latency_bound" if size < LARGE else verdict])
    return out


def render_size_table(root: Path, data: dict) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(rows(root, data))
    return buf.getvalue()
