"""Real all_reduce_perf outputs (tests/fixtures/outputs/nccl-tests/, each file's first lines name its source)
read through the nccl-tests grammar: every size row is a row, the average is read, and all_reduce's busbw is
algbw x 2(n-1)/n (NVIDIA/nccl-tests doc/PERFORMANCE.md), the figure docs/counters.md section 6 cites."""

from __future__ import annotations

from pathlib import Path

import pytest

from allreduce_doctor.parsers.nccl_tests import AVG_RE, parse_row

OUTPUTS = Path(__file__).resolve().parents[1] / "fixtures" / "outputs" / "nccl-tests"
FILES = sorted(OUTPUTS.glob("*.txt"))


def _body(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    assert lines[0].startswith("# source: ") and lines[2] == "# ---", path.name
    return lines[3:]


def test_the_real_outputs_are_there():
    assert len(FILES) == 7


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_size_row_of_a_real_output_is_read(path):
    lines = _body(path)
    rows = [row for row in map(parse_row, lines) if row]
    numeric = [line for line in lines if line.split() and line.split()[0].isdigit()]
    assert rows and len(rows) == len(numeric)
    assert all(row["out_of_place"]["busbw"] >= 0 for row in rows)


def test_the_average_line_is_read():
    avg = [AVG_RE.match(line) for line in _body(OUTPUTS / "nccl-tests-all_reduce_perf-8gpu-a100-nvlink.txt")]
    assert [float(m.group(1)) for m in avg if m]


def test_all_reduce_busbw_is_algbw_times_2_n_minus_1_over_n():
    rows = [row for row in map(parse_row, _body(OUTPUTS / "nccl-tests-all_reduce_perf-8gpu-a100-nvlink.txt")) if row]
    large = [row["out_of_place"] for row in rows if row["out_of_place"]["algbw"] >= 1]
    assert large
    for half in large:
        assert half["busbw"] == pytest.approx(half["algbw"] * 2 * 7 / 8, rel=0.01, abs=0.01)
