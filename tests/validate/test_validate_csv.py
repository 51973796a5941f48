"""`validate --format csv`: each benchmark's busbw per size from the record, against NICs x line rate
(RFC 4180 CSV, read back with Python's csv module), the judge's figures and verdicts."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from allreduce_doctor.commands.validate import report
from allreduce_doctor.validate.size_table import HEADER, render_size_table

OUTPUT = Path(__file__).parents[1] / "fixtures/outputs/nccl-tests/nccl-tests-all_reduce_perf-16gpu-2node-h100-gcp.txt"
BUSBW_STEP = {"node": "validate.busbw", "kind": "check", "outcome": "no",
              "value": {"all_reduce_perf": {"peak_busbw_gbs": 330.58, "expected_gbs": 400.0, "ratio": 0.826,
                                            "verdict": "below"}}}


def record(tmp_path: Path) -> Path:
    root = tmp_path / "rec"
    (root / "steps").mkdir(parents=True)
    shutil.copy(OUTPUT, root / "steps" / "00-all_reduce_perf.out")
    steps = [{"name": "all_reduce_perf", "argv": ["srun"], "rc": 0, "timed_out": False, "seconds": 1.0,
              "output": "steps/00-all_reduce_perf.out", "error": ""},
             {"name": "incast", "argv": ["srun", "ib_write_bw", "gpu1"], "rc": 0, "timed_out": False, "seconds": 1.0,
              "output": "", "error": ""}]
    (root / "validate.json").write_text(json.dumps({"format": 1, "plan": {}, "steps": steps, "rounds": []}))
    return root


def table(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_every_size_is_a_row_judged_as_the_judge_does(tmp_path):
    rows = table(render_size_table(record(tmp_path), {"path": [BUSBW_STEP]}))
    assert tuple(rows[0]) == HEADER
    assert len(rows) == 1 + 31  # 8 B to 8 GiB, one row per size; the incast step has none
    by_size = {int(r[1]): r for r in rows[1:]}
    assert by_size[8] == ["all_reduce_perf", "8", "0", "0", "400", "0", "latency_bound"]
    assert by_size[16777216] == ["all_reduce_perf", "16777216", "17.63", "33.06", "400", "0.083",
                                 "latency_bound"]  # below 32 MiB: NCCL's latency term, never judged by bandwidth
    assert by_size[4294967296] == ["all_reduce_perf", "4294967296", "176.31", "330.58", "400", "0.826", "below"]
    assert by_size[1073741824][3:] == ["298.82", "400", "0.747", "below"]  # in-place, the better one there


def test_an_unknown_expected_figure_is_an_empty_cell_never_zero(tmp_path):
    rows = table(render_size_table(record(tmp_path), {"path": []}))
    assert rows[-1] == ["all_reduce_perf", "8589934592", "180.71", "338.82", "", "", "unmeasured"]


def test_report_writes_the_csv_and_keeps_the_exit_code(tmp_path, capsys):
    code = report({"verdict": "fault", "path": [BUSBW_STEP]}, "csv", None, None, record(tmp_path))
    out = capsys.readouterr().out
    assert code == 1 and out.splitlines()[0] == ",".join(HEADER) and len(out.splitlines()) == 32


@pytest.mark.slow
def test_a_real_run_replays_as_csv(tmp_path, monkeypatch, capsys):
    from allreduce_doctor.cli import main
    from tests.validate.harness import run_scenario

    data, root = run_scenario("at_limit", tmp_path, monkeypatch)
    assert main(["diagnose", "--snapshot", str(root), "--format", "csv"]) == 0
    rows = table(capsys.readouterr().out)
    expected = data["path"][[s["node"] for s in data["path"]].index("validate.busbw")]["value"]["all_reduce_perf"]
    assert rows[0] == list(HEADER) and {r[0] for r in rows[1:]} == {"all_reduce_perf"}
    assert [int(r[1]) for r in rows[1:]] == [1 << k for k in range(20, 34)]  # 1M to 8G, x2
    assert rows[-1][4] == f"{expected['expected_gbs']:g}" and rows[-1][6] == expected["verdict"]
