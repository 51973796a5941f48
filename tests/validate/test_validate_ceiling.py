"""validate's own all_reduce_perf judged per size by the ceiling model (issue 28, item 3).

Four nodes of 8x H100 SXM with 8 NDR ports each in Gen4 x16 slots (the nodes' bundles give the rails' PCIe link,
validate/record.node_figures): each port carries 31.5 GB/s, not 50 (PCI-SIG Gen4 x16), so the ceiling is
8 x 31.5 = 252 GB/s. NICs x line rate alone (400 GB/s) would call the 240 GB/s peak below. One host of 8x H100 SXM is judged against its
NVLink (NVLS: 480 GB/s published), never the NICs; sizes below 32 MiB are latency-bound and not judged."""

from __future__ import annotations

from pathlib import Path

import pytest

from allreduce_doctor.busbw import SMALL_ONLY
from allreduce_doctor.doctor import Doctor
from allreduce_doctor.validate.judge import _Judge
from allreduce_doctor.validate.plan import Plan
from allreduce_doctor.validate.record import read_round

HOSTS = ["gpu01", "gpu02", "gpu03", "gpu04"]
HEADER = ("# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 "
          "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n")
COLUMNS = ("#\n#                                                              out-of-place                       in-place\n"
           "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw"
           " #wrong\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  "
           "(GB/s)  (GB/s)\n")
ROWS = ("     1048576        262144     float     sum      -1    40.00   26.21   50.79      0    40.10   26.15   50.66"
        "      0\n"
        "    67108864      16777216     float     sum      -1    650.0  103.24  200.03      0    651.0  103.09  199.73"
        "      0\n"
        "  1073741824     268435456     float     sum      -1   8665.0  123.92  240.09      0   8670.0  123.85  239.95"
        "      0\n")


def _row(size: int, busbw: float) -> str:
    return (f"{size:12d}  {size // 4:12d}     float     sum      -1    100.0   10.00 {busbw:7.2f}      0    100.0   10.00"
            f" {busbw:7.2f}      0\n")


def _judge(nic_pcie, hosts=HOSTS, rows=ROWS):
    ranks = "".join(f"#  Rank {8 * h + d:2d} Group  0 Pid  {4000 + 8 * h + d} on {host:>10} device  {d} [0x{24 + d:02x}] "
                    "NVIDIA H100 80GB HBM3\n" for h, host in enumerate(hosts) for d in range(8))
    plan = Plan(nodes=hosts, source="test", launcher="srun", ranks_per_node=8, min_bytes=1048576,
                max_bytes=1073741824, factor=2, interval=1.0, max_seconds=60.0)
    figs = {n: {"nics": 8, "line_gbps": 400.0, "numbers": {}, "nic_pcie": nic_pcie} for n in hosts}
    steps = [{"name": "all_reduce_perf", "argv": ["srun", "all_reduce_perf"], "output": "steps/00-all_reduce_perf.out"}]
    return _Judge(plan, [{"step": None, "nodes": figs}], steps, {0: HEADER + ranks + COLUMNS + rows}, None)


def test_each_size_is_judged_against_the_ceiling_and_small_ones_are_latency_bound():
    judge = _judge([4, 16])
    assert judge.bandwidth() == "at_limit"
    rows = [(e.fact, e.observed["ceiling"], e.expected) for e in judge.d.evidence if e.node == "validate.busbw"]
    assert rows == [("all_reduce_perf busbw at 1048576 B", "latency_bound", "not judged: latency-bound below 32 MiB"),
                    ("all_reduce_perf busbw at 67108864 B", "below", "about 252 GB/s (NICs)"),
                    ("all_reduce_perf busbw at 1073741824 B", "at_limit", "about 252 GB/s (NICs)")]
    step = judge.d.path[-1]
    assert (step.node, step.outcome) == ("validate.busbw", "no")
    assert step.means.endswith("; against the ceiling: NICs: 240.09 of about 252 GB/s across 4 nodes (8 NICs per node "
                               "x 400 Gb/s ports each capped by their PCIe Gen4 x16 link (31.5 GB/s each way)): at the "
                               "hardware's limit, not a fault")


def test_without_the_slot_the_same_run_is_below_the_nics():
    judge = _judge(None)
    assert judge.bandwidth() == "below"
    value = judge.d.path[-1].value["all_reduce_perf"]
    assert (value["ceiling_gbs"], value["hardware"], value["verdict"]) == (400.0, "below", "below")


ONE_HOST = ("every rank of this run is on one host: NVLink or PCIe (P2P, SHM) carry it, not the NICs. NVLink (NVLS): "
            "{} of about 480 GB/s on 8x H100-SXM (NVLS on 8 GPUs: 480 GB/s published)")


def test_one_host_at_468_is_its_nvlink_limit_not_the_nics():
    judge = _judge(None, ["gpu01"], _row(1048576, 90.5) + _row(1073741824, 468.0))
    assert judge.bandwidth() == "at_limit"
    rows = [(e.observed["ceiling"], e.expected) for e in judge.d.evidence if e.node == "validate.busbw"]
    assert rows == [("latency_bound", "not judged: latency-bound below 32 MiB"),
                    ("at_limit", "about 480 GB/s (NVLink (NVLS))")]
    value = judge.d.path[-1].value["all_reduce_perf"]
    assert (value["ceiling_gbs"], value["hardware"], value["verdict"]) == (480.0, "at_limit", "at_limit")
    assert value["hardware_note"] == ONE_HOST.format(468) + ": at the hardware's limit, not a fault"
    assert judge.d.path[-1].outcome == "no"


def test_one_host_at_120_is_below_its_nvlink_by_three_quarters():
    judge = _judge(None, ["gpu01"], _row(1048576, 20.0) + _row(1073741824, 120.0))
    assert judge.bandwidth() == "below"
    assert [e.observed["ceiling"] for e in judge.d.evidence if e.node == "validate.busbw"] == ["latency_bound", "below"]
    value = judge.d.path[-1].value["all_reduce_perf"]
    assert value["hardware_note"].startswith(ONE_HOST.format(120) + ", 75% below what it should carry; what can hold "
                                             "NVLink (NVLS) back: links down")
    assert judge.d.path[-1].outcome == "yes"


def test_a_run_without_a_large_size_gets_no_ceiling_verdict():
    # 150 GB/s at 16 MiB is 38% of the NICs' 400: NICs x line rate alone called it below, a fault
    judge = _judge([4, 16], rows=_row(1048576, 50.0) + _row(16777216, 150.0))
    assert judge.bandwidth() == "small_only"
    assert [e.observed["ceiling"] for e in judge.d.evidence if e.node == "validate.busbw"] == ["latency_bound"] * 2
    step = judge.d.path[-1]
    assert (step.node, step.outcome) == ("validate.busbw", "unknown")
    value = step.value["all_reduce_perf"]
    assert (value["hardware"], value["hardware_note"], value["verdict"]) == ("unknown", SMALL_ONLY, "small_only")


@pytest.mark.parametrize(("bundle", "nic_pcie"), [("pcie-gen5-nic-gen4-slot", [4, 16]), ("ib-healthy", [5, 16])])
def test_the_nodes_bundles_give_the_rails_pcie_link(bundle, nic_pcie):
    root = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios" / bundle
    figures, failed = read_round(root, {"gpu01": "bundle.tar.gz"}, Doctor.load())
    assert failed == {}
    assert (figures["gpu01"]["nics"], figures["gpu01"]["line_gbps"], figures["gpu01"]["nic_pcie"]) == (8, 400, nic_pcie)


def test_a_small_only_run_is_inconclusive_and_says_what_to_rerun():
    judge = _judge([4, 16], rows=_row(1048576, 50.0) + _row(16777216, 150.0))
    data = judge.finish(judge.bandwidth(), {})
    assert (data["verdict"], data["root_cause"]) == ("inconclusive", None)
    assert {"node": "validate.busbw", "reason": f"all_reduce_perf: {SMALL_ONLY}"} in [
        {k: i.get(k) for k in ("node", "reason")} for i in data["inconclusive"]]
