"""Environment and launcher lines (log.env) and nccl-tests output (log.tests)."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence.reader import EvidenceError
from allreduce_doctor.evidence.tests_table import parse_row
from tests.evidence.helpers import REAL, facts, fixture_body, load_text


@pytest.mark.parametrize("line,expected", [
    ("export NCCL_IB_DISABLE=1", {"NCCL_IB_DISABLE": "1"}),
    ('export NCCL_SOCKET_IFNAME="eth0" #172.17.0.3 on CA', {"NCCL_SOCKET_IFNAME": "eth0"}),
    ("NCCL_IB_HCA=^mlx5_2", {"NCCL_IB_HCA": "^mlx5_2"}),
    ("$ NCCL_DEBUG=INFO NCCL_P2P_LEVEL=LOC torchrun train.py", {"NCCL_DEBUG": "INFO", "NCCL_P2P_LEVEL": "LOC"}),
    ("mpirun -np 8 -x NCCL_P2P_DISABLE=1 -x NCCL_IB_GID_INDEX=3 ./all_reduce_perf -b 8",
     {"NCCL_P2P_DISABLE": "1", "NCCL_IB_GID_INDEX": "3"}),
    ("mpiexec -genv NCCL_ALGO Ring -n 4 ./x", {"NCCL_ALGO": "Ring"}),
    ("srun --export=ALL,NCCL_NET_GDR_LEVEL=0,NCCL_DEBUG=WARN python t.py", {"NCCL_NET_GDR_LEVEL": "0", "NCCL_DEBUG": "WARN"}),
    ("docker run -e NCCL_IB_DISABLE=0 image", {"NCCL_IB_DISABLE": "0"}),
    ("ENV NCCL_PROTO=LL", {"NCCL_PROTO": "LL"}),
    ('os.environ["NCCL_BUFFSIZE"] = "1048576"', {"NCCL_BUFFSIZE": "1048576"}),
    ("  NCCL_MAX_NCHANNELS: 2", {"NCCL_MAX_NCHANNELS": "2"}),
    ("NCCL_P2P_LEVEL set by environment to LOC", {"NCCL_P2P_LEVEL": "LOC"}),
])
def test_env_spellings(tmp_path, line, expected):
    assert facts(tmp_path, line + "\n")["log.env"]["vars"] == expected


def test_kubernetes_name_value_pairs(tmp_path):
    env = facts(tmp_path, "env:\n  - name: NCCL_IB_HCA\n    value: \"mlx5_0,mlx5_1\"\n")["log.env"]
    assert env["vars"] == {"NCCL_IB_HCA": "mlx5_0,mlx5_1"}


def test_prose_is_not_an_assignment(tmp_path):
    text = "It works when I set NCCL_P2P_DISABLE=1 but is slow\nNCCL INFO Using network IB\n"
    assert facts(tmp_path, text)["log.env"]["vars"] == {}


def test_what_nccl_reports_wins_over_a_command_line(tmp_path):
    text = "h:1:2 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0.\nexport NCCL_IB_HCA=mlx5_1\n"
    env = facts(tmp_path, text)["log.env"]
    assert env["vars"] == {"NCCL_IB_HCA": "mlx5_0"}
    assert env["sources"] == {"NCCL_IB_HCA": f"{tmp_path}/paste.txt:1"}


def test_launch_parameters(tmp_path):
    text = "mpirun -np 32 -H server1:8,server2:8,server3:8,server4:8 \\\n-x NCCL_DEBUG=INFO \\\n./build/all_reduce_perf -b 8 -e 512M -f 2 -g 1\n"
    f = facts(tmp_path, text)
    assert f["log.env"]["launch"] == {"np": 32, "hosts": ["server1", "server2", "server3", "server4"], "per_node": 8,
                                      "source": f"{tmp_path}/paste.txt:1", "gpus_per_proc": 1, "test": "all_reduce"}
    assert (f["log.job"]["scope"], f["log.job"]["nodes"], f["log.job"]["ranks"]) == ("inter", 4, 32)


@pytest.mark.parametrize("row,expected", [
    ("   536870912     134217728     float     sum      -1   2984.6  179.88  356.01      0   2979.7  180.18  356.60      0",
     (536870912, "sum", -1, 356.01, 356.60, 0)),
    ("           8             2   float       0    45.82    0.00    0.00    N/A    38.17    0.00    0.00    N/A",
     (8, None, 0, 0.0, 0.0, None)),
    ("     1048576        262144     float    none    55.10   19.03   16.65  0e+00    54.90   19.10   16.71  0e+00",
     (1048576, "none", None, 16.65, 16.71, 0)),
    ("    33554432       8388608     float     sum      -1    489.2   68.59  128.61      0",
     (33554432, "sum", -1, 128.61, None, 0)),
])
def test_rows(row, expected):
    r = parse_row(row)
    assert (r["size"], r["redop"], r["root"], r["out_of_place"]["busbw"],
            r["in_place"]["busbw"] if r["in_place"] else None, r["out_of_place"]["wrong"]) == expected


@pytest.mark.parametrize("row", ["1 2 3", "# size count type", "mlx5_0 1 3 fe80::1 v2", "12 34 float sum -1 a b c 0"])
def test_not_rows(row):
    assert parse_row(row) is None


def test_a_two_node_run(tmp_path):
    path = REAL / "nccl-tests-all_reduce_perf-16gpu-2node-h100-gcp.txt"
    tests = facts(tmp_path, fixture_body(path))["log.tests"]
    main = tests["main"]
    assert (main["ranks"], main["nodes"], main["hosts"], main["gpu_models"]) == \
        (16, 2, ["ztan-mig-235z", "ztan-mig-gq73"], ["NVIDIA H100 80GB HBM3"])
    assert (main["rows"], main["sizes"], main["largest_size"]) == (31, [8, 8589934592], 8589934592)
    assert (main["peak_busbw_large"], main["avg_busbw"], main["wrong"], main["completed"]) == (338.82, 70.742, 0, True)
    assert (main["min_bytes"], main["max_bytes"], main["threads"], main["gpus_per_thread"]) == (8, 8589934592, 1, 1)


def test_a_run_that_never_printed_results(tmp_path):
    text = ("# nThread 1 nGpus 4 minBytes 8 maxBytes 268435456 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
            "#\n# Using devices\n"
            + "".join(f"#   Rank  {r} Pid  15833 on box device  {r} [0x0{r}] GeForce GTX 1080 Ti\n" for r in range(4)))
    main = facts(tmp_path, text)["log.tests"]["main"]
    assert (main["ranks"], main["nodes"], main["rows"], main["completed"]) == (4, 1, 0, False)


# NCCL 1.x's own tests, in the shapes NVIDIA/nccl v1.3.4-1 test/single/all_reduce_test.cu prints them.
V1_HEADER = ("# Using devices\n"
             + "".join(f"#   Rank {r:2d} uses device {r:2d} [0x{5 + r:02x}] Tesla M40 24GB\n" for r in range(8))
             + "\n# " + " " * 10 + "  " + " " * 12 + "  " + " " * 6 + "  " + " " * 6
             + "        out-of-place                    in-place\n"
             + "# %10s  %12s  %6s  %6s  %7s  %5s  %5s  %7s  %7s  %5s  %5s  %7s\n"  # noqa: UP031 (the C printf)
             % ("bytes", "N", "type", "op", "time", "algbw", "busbw", "res", "time", "algbw", "busbw", "res"))
V1_ROWS = ("%12i  %12i  %6s  %6s  %7.3f  %5.2f  %5.2f  %7.0le  %7.3f  %5.2f  %5.2f  %7.0le\n"  # noqa: UP031 (the C printf)
           % (33554432, 33554432, "char", "sum", 5.391, 6.22, 10.89, 0.0, 5.362, 6.26, 10.95, 0.0)
           + "\n Out of bounds values : 0 OK\n Avg bus bandwidth    : 10.92 \n\n")


def test_an_nccl_1x_test_run(tmp_path):
    main = facts(tmp_path, V1_HEADER + V1_ROWS)["log.tests"]["main"]
    assert (main["ranks"], main["nodes"], main["hosts"], main["gpu_models"]) == (8, 1, [], ["Tesla M40 24GB"])
    assert (main["rows"], main["peak_busbw_large"], main["avg_busbw"], main["out_of_bounds"], main["completed"]) == \
        (1, 10.95, 10.92, 0, True)


def test_an_nccl_1x_header_pasted_without_its_marks_is_a_one_node_run_that_stalled(tmp_path):
    """A page rendered from markdown drops the `#` (or a mail quote replaces it): the words are the tests' own."""
    pasted = "\n".join("> " + line.lstrip("#").strip() if line.strip() else ">" for line in V1_HEADER.splitlines())
    got = facts(tmp_path, "When i use nccl test on 8 GPUs it stalls.\n\n" + pasted + "\n")
    main = got["log.tests"]["main"]
    assert (main["ranks"], main["nodes"], main["rows"], main["completed"]) == (8, 1, 0, False)
    assert got["log.job"]["scope"] == "intra" and got["log.job"]["p2p_hang"] is True


@pytest.mark.parametrize("line", ["Using devices for the job", "Rank 3 uses the GPU", "Avg bus bandwidth is low"])
def test_prose_with_the_tests_words_is_not_their_header(tmp_path, line):
    with pytest.raises(EvidenceError, match="this text shows no NCCL output line and describes no NCCL trouble"):
        facts(tmp_path, line + "\n")


def test_the_run_header_quoted_without_its_mark_starts_a_run(tmp_path):
    """nccl-tests-14's shape: the header line put in quotes in prose, its `#` gone."""
    text = ('The error msg is\n"nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 '
            'iters: 20 validation: 1\n')
    main = facts(tmp_path, text)["log.tests"]["main"]
    assert (main["gpus_per_thread"], main["min_bytes"], main["max_bytes"], main["rows"]) == (8, 8, 134217728, 0)


@pytest.mark.parametrize("line", ["# Reducing maxBytes to 7539021141 due to memory limitation",
                                  "# Collective test concluded: all_reduce_perf",
                                  "# GPU memory usage     : Sendbuff 1.00 GB | Recvbuff 1.00 GB | Total  2.00 GB",
                                  "# Blocking Enabled: wait and barrier after each inner iteration (-m) "])
def test_nccl_tests_own_notes_are_its_output(tmp_path, line):
    text = "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
    result = load_text(tmp_path, text + line + "\n")
    assert result.report["files"][0]["unplaced"]["count"] == 0, result.report["files"][0]["unplaced"]
