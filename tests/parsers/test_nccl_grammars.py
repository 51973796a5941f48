"""The NCCL log, nccl-tests and environment-line grammars (parsers/nccl_*.py) on real outputs
(tests/evidence/data/real, each file headed by its source): shapes only, no verdicts."""

from __future__ import annotations

from pathlib import Path

from allreduce_doctor.parsers.nccl_env import LEAD_RE, REPORTED_RE
from allreduce_doctor.parsers.nccl_log import BARE_CONN_RE, CONN_RE, VERSION_RE, split
from allreduce_doctor.parsers.nccl_tests import AVG_RE, parse_row

REAL = Path(__file__).resolve().parents[1] / "evidence" / "data" / "real"


def _lines(name: str) -> list[str]:
    return [line for line in (REAL / name).read_text().splitlines() if not line.startswith("# source")]


def test_a_launcher_tagged_nccl_25_log_splits_into_host_device_level_message():
    lines = _lines("nccl-302-rank-tag-ib-and-roce.txt")
    assert split(lines[0]) == ("crow-ib-new-nccl-256-info-19", 3, "INFO", "",
                               "Bootstrap : Using [0]eth0:10.100.62.64<0>")
    parts = [split(line) for line in lines]
    assert all(p is not None for p in parts if p) and sum(p is not None for p in parts) >= len(lines) // 2


def test_warn_lines_keep_their_source_file_across_prefix_shapes():
    for line in ("h:1:2 [0] transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion",
                 "[1,3]<stdout>:transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion",
                 "2025-01-01T00:00:00Z h:1:2 [0] transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion"):
        assert split(line)[2:] == ("WARN", "transport/net_ib.cc", "NET/IB : Got completion"), line


def test_connection_lines_of_three_nccl_generations():
    assert CONN_RE.match("Ring 00 : 0 -> 1 via NET/IB/0").group(3) == "NET/IB/0"
    assert CONN_RE.match("Channel 00 : 0[1a000] -> 1[1b000] via P2P/IPC").group(3) == "P2P/IPC"
    assert CONN_RE.match("Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA").group(3) == "NET/IB/0/GDRDMA"
    assert BARE_CONN_RE.search("9[1a000] -> 2[6b000] [receive] via NET/IB/1").group(1) == "NET/IB/1"
    assert VERSION_RE.search("NCCL version 2.18.5+cuda12.2").groups() == ("2", "18", "5", "+cuda12.2")


def test_the_all_reduce_perf_table_of_an_8_gpu_a100():
    lines = _lines("nccl-tests-all_reduce_perf-8gpu-a100-nvlink.txt")
    rows = [r for r in map(parse_row, lines) if r]
    assert len(rows) == 30
    assert rows[0]["size"] == 8 and rows[0]["out_of_place"] == {"time_us": 40.12, "algbw": 0.0, "busbw": 0.0, "wrong": 0}
    assert [float(m.group(1)) for m in map(AVG_RE.match, lines) if m] == [66.2058]


def test_environment_lines_and_nccls_own_report():
    assert LEAD_RE.match("export NCCL_IB_HCA='^=mlx5_8,^=mlx5_14'").groups() == ("NCCL_IB_HCA", "'^=mlx5_8,^=mlx5_14'")
    assert REPORTED_RE.search("NCCL INFO NCCL_IB_DISABLE set by environment to 0.").groups() == ("NCCL_IB_DISABLE", "0")
