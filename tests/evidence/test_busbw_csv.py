"""`diagnose --format csv`: the pasted nccl-tests table's busbw per size beside the ceiling (issue 28 item 4): the
header, one row per size, small sizes `latency_bound` (below evidence/tests_table.LARGE, 32 MiB), an unknown
ceiling an empty cell and `unknown`, never 0; no table, or a validate record, one clear line and no CSV."""

from __future__ import annotations

import contextlib
import io

from allreduce_doctor.cli import main
from tests.evidence.helpers import ROOT, fixture_body

TABLES = ROOT / "tests" / "fixtures" / "ceiling"
AT_LIMIT = fixture_body(TABLES / "nccl-tests-all_reduce_perf-8gpu-h100-sxm-at-nvls-limit.txt")
UNNAMED = fixture_body(TABLES / "nccl-tests-all_reduce_perf-8gpu-unnamed-device.txt")
HEADER = "size_bytes,collective,algbw_gbps,busbw_gbps,ceiling_gbps,resource,verdict"
# nccl-tests 2.17+ names the program before the header (src/common.cu: `# Collective test starting: %s`).
STARTING = "# nccl-tests version 2.17.6 nccl-headers=22501 nccl-library=22501\n# Collective test starting: all_reduce_perf\n"


def _csv(tmp_path, text: str, *extra: str) -> tuple[int, str, str]:
    path = tmp_path / "paste.txt"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["diagnose", "--evidence", str(path), "--format", "csv", *extra])
    return rc, out.getvalue(), err.getvalue()


def test_one_row_per_size_against_the_nvls_ceiling(tmp_path):
    rc, out, err = _csv(tmp_path, STARTING + AT_LIMIT)
    lines = out.splitlines()
    assert lines[0] == HEADER and err == ""
    assert len(lines) == 1 + 14  # 1 MiB to 8 GiB, factor 2
    assert lines[1] == "1048576,all_reduce,40.11,70.2,480,NVLink (NVLS),latency_bound"
    assert lines[5] == "16777216,all_reduce,131.04,229.32,480,NVLink (NVLS),latency_bound"
    assert lines[6] == "33554432,all_reduce,155.11,271.44,480,NVLink (NVLS),below"  # 0.57 of 480
    assert lines[11] == "1073741824,all_reduce,260.74,456.3,480,NVLink (NVLS),at_limit"  # 0.95
    assert lines[-1].endswith(",480,NVLink (NVLS),at_limit")
    assert rc == 0  # healthy: expected_hardware_limit, as the report says


def test_a_table_that_names_no_collective_leaves_the_cell_empty(tmp_path):
    _rc, out, _ = _csv(tmp_path, AT_LIMIT)
    assert out.splitlines()[1] == "1048576,,40.11,70.2,480,NVLink (NVLS),latency_bound"


def test_an_unknown_ceiling_is_an_empty_cell_never_zero(tmp_path):
    _rc, out, _ = _csv(tmp_path, UNNAMED)
    rows = [line.split(",") for line in out.splitlines()[1:]]
    assert rows and all(r[4] == "" and r[5] == "" for r in rows)
    assert {r[6] for r in rows if int(r[0]) >= 32 << 20} == {"unknown"}
    assert {r[6] for r in rows if int(r[0]) < 32 << 20} <= {"latency_bound"}


def test_no_table_is_one_line_and_no_csv(tmp_path):
    rc, out, err = _csv(tmp_path, "node-a:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n")
    assert rc != 0 and out == ""
    assert err.strip().endswith("--format csv writes the busbw curve of a pasted nccl-tests table, and the evidence "
                                "holds none: pass all_reduce_perf output with --evidence FILE")
    assert len(err.strip().splitlines()) == 1


def test_a_validate_record_is_refused_not_written_as_text():
    from allreduce_doctor.commands.validate import report
    from allreduce_doctor.errors import DoctorError

    try:
        report({"verdict": "healthy"}, "csv", None, None)
    except DoctorError as err:
        assert "a validate record's run is not written as CSV: use --format json" in str(err)
    else:
        raise AssertionError("csv on a validate record was written")
