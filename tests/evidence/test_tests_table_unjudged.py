"""A table that is not one nccl-tests run gets one clear sentence and no verdict (issue 28 item 5): two runs in one
paste (two `# nThread` headers), rows whose sizes go back down (two runs' rows mixed), a header naming columns
nccl-tests never prints. rccl-tests' own shapes (ROCm/rccl-tests src/common.cu @ae3e635: the same header, or the
in-place half alone with -O 0) are nccl-tests' columns and are read."""

from __future__ import annotations

import contextlib
import io

from allreduce_doctor.busbw import phrase
from allreduce_doctor.cli import main
from tests.evidence.helpers import diagnose_json

HEAD = ("# nThread 1 nGpus 8 minBytes 33554432 maxBytes 67108864 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 "
        "validation: 1 graph: 0\n#\n# Using devices\n"
        + "".join(f"#  Rank  {i} Group  0 Pid  1234 on     node-a device  {i} [0x{16 + i:02x}] NVIDIA H100 80GB HBM3\n"
                  for i in range(8)))
COLS = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
        "#wrong\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
        "(GB/s)\n")
FAST = ("    33554432       8388608     float     sum      -1    150.0  223.70  391.47      0    151.0  222.22  388.88  0\n"
        "    67108864      16777216     float     sum      -1    250.0  268.44  469.77      0    251.0  267.37  467.89  0\n")
SLOW = ("    33554432       8388608     float     sum      -1    600.0   55.92   97.86      0    601.0   55.83   97.70  0\n"
        "    67108864      16777216     float     sum      -1   1000.0   67.11  117.44      0   1001.0   67.04  117.32  0\n")
END = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 300.1\n#\n"


def _no_verdict(d: dict, sentence: str) -> None:
    bw = d["bandwidth"]
    assert (bw["verdict"], bw["hardware"], bw["limit"], bw["measured_gbs"]) == ("unjudged", "unknown", None, None)
    assert bw["note"] == sentence
    assert phrase(bw, False) == "busbw is not judged: " + sentence
    assert d["healthy"] is None or d["healthy"]["id"] != "expected_hardware_limit"


def test_two_runs_in_one_paste_are_not_judged(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, HEAD + COLS + FAST + END + HEAD + COLS + SLOW + END)
    _no_verdict(d, "the paste holds 2 nccl-tests runs (each `# nThread` header starts one): which one to judge is "
                   "not known, so no busbw is judged; paste the output of one run")


def test_sizes_going_back_down_are_two_runs_mixed(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, HEAD + COLS + FAST + SLOW + END)
    _no_verdict(d, "the table's sizes go back down (67108864 B, then 33554432 B): the rows of more than one run are "
                   "mixed in it, so its busbw is not judged; paste the output of one run")


def test_a_header_with_columns_nccl_tests_never_prints_is_not_judged(tmp_path):
    other = COLS.replace("root     time", "root  latency     time", 1)  # a column no nccl-tests version prints
    _rc, d, _ = diagnose_json(tmp_path, HEAD + other + FAST + END)
    _no_verdict(d, "the table's columns (latency) are not nccl-tests' (size count type redop root time algbw busbw "
                   "#wrong), so its busbw is not judged; paste all_reduce_perf output")


def test_one_run_is_still_judged(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, HEAD + COLS + FAST + END)
    assert (d["bandwidth"]["hardware"], d["bandwidth"]["measured_gbs"]) == ("at_limit", 469.77)


def test_rccl_tests_in_place_only_is_read():
    """rccl-tests -O 0 prints `size count type redop root time algbw busbw #wrong` and one half per row."""
    from allreduce_doctor.evidence.tests_table import TestsLog

    log = TestsLog()
    text = ("# rccl-tests version 2.17.9-develop:2596ca5f71 rccl-headers=22803 rccl-library=22707\n"
            "# Collective test starting: all_reduce_perf\n" + HEAD.replace("NVIDIA H100 80GB HBM3", "AMD Radeon Graphics")
            + "#                                                      in-place\n"
            "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)\n"
            "    33554432       8388608     float     sum      -1   183.45  182.91  320.09       0\n"
            "    67108864      16777216     float     sum      -1   324.09  207.07  362.37       0\n" + END)
    for i, line in enumerate(text.splitlines()):
        log.feed(line, f"paste:{i + 1}")
    main_run = log.summary()["main"]
    assert (main_run["unjudged"], main_run["peak_busbw_large"], main_run["collective"]) == (None, 362.37, "all_reduce")


def test_csv_of_two_runs_is_the_same_one_sentence(tmp_path):
    path = tmp_path / "paste.txt"
    path.write_text(HEAD + COLS + FAST + END + HEAD + COLS + SLOW + END)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["diagnose", "--evidence", str(path), "--format", "csv"])
    assert rc != 0 and out.getvalue() == ""
    assert err.getvalue().strip().endswith("--format csv: the paste holds 2 nccl-tests runs (each `# nThread` header "
                                           "starts one): which one to judge is not known, so no busbw is judged; "
                                           "paste the output of one run")


def test_the_at_limit_step_names_the_model_not_the_nics_alone(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, HEAD + COLS + FAST + END)
    step = next(p for p in d["path"] if p["node"] == "nccl_log.at_limit")
    assert step["title"] == ("Measured bus bandwidth across nodes compared with its ceiling (the NICs or the node's "
                             "own links)")


def test_across_nodes_with_ncclalgo_ring_the_nodes_own_bound_is_the_rings(tmp_path):
    """NCCL_ALGO=Ring in the log: no NVLS, so the node's own links cap at the ring's 18 x 20.6 = 370.8 GB/s (NCCL's
    figure, src/graph/topo.h), below the NICs' 8 x 50 (issue 28 brief item d; held on main already: a guard)."""
    ranks = "".join(f"#  Rank {i:2d} Group  0 Pid  {1000 + i} on     node-{'ab'[i // 8]} device  {i % 8} [0x{16 + i % 8:02x}] "
                    "NVIDIA H100 80GB HBM3\n" for i in range(16))
    table = (HEAD.split("#\n")[0] + "#\n# Using devices\n" + ranks + COLS
             + "  8589934592    2147483648     float     sum      -1    43000  199.76  374.55      0    43100  199.30  373.69"
               "      0\n" + END)
    answers = ("--answer", "nics_per_node=8", "--answer", "nic_rate_gbps=400")
    ring = "node-a:313:313 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n"
    _rc, d, _ = diagnose_json(tmp_path, ring + table, *answers)
    bw = d["bandwidth"]
    assert (bw["hardware"], bw["limit"], bw["ceiling"]["ceiling_gbs"]) == ("at_limit", "NVLink", 370.8)
    _rc, d, _ = diagnose_json(tmp_path, table, *answers)  # NCCL's choice: NVLS may run, the NICs cap it
    assert (d["bandwidth"]["limit"], d["bandwidth"]["ceiling"]["ceiling_gbs"]) == ("NICs", 400.0)


def test_job_ceiling_of_two_runs_has_no_scope_and_says_it_came_from_the_table(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, HEAD + COLS + FAST + END + HEAD + COLS + SLOW + END)
    step = next(p for p in d["path"] if p["node"] == "nccl_log.at_limit")
    read = {e["fact"]: e["observed"] for e in d["evidence"] if e.get("node") == "nccl_log.at_limit"}
    assert step["outcome"] == "no"
    assert (read["job.ceiling.measured_from"], read["job.ceiling.scope"]) == ("table", None)
