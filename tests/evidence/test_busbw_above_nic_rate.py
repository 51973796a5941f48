"""A results table whose busbw is clearly above what the NICs carry (issue 12, dev11): never a fault, and the
Diagnosis says why (domain.busbw_above_reason: NCCL's tree on two nodes, NVLS/CollNet where NCCL_ALGO shows
them, a ring that shows more NICs than the text does) and what would show a real shortfall. The tables are
written here in nccl-tests' shape (all_reduce_perf 2.x: header, ranks with their hosts, size rows)."""

from __future__ import annotations

import pytest

from allreduce_doctor.busbw import ONE_HOST, above_note, phrase
from allreduce_doctor.domain import BUSBW_ABOVE_REASONS, allreduce_algos, busbw_above_reason
from allreduce_doctor.evidence.report_words_table import table
from allreduce_doctor.validate.judge import _Judge
from allreduce_doctor.validate.plan import Plan
from tests.evidence.helpers import diagnose_json

HEADER = ("# nThread 1 nGpus 1 minBytes 536870912 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 "
          "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n")
COLUMNS = ("#\n#                                                              out-of-place                       in-place\n"
           "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw"
           " #wrong\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  "
           "(GB/s)  (GB/s)\n")
ROWS = ("   536870912     134217728     float     sum      -1    48905   10.98   19.21      0    48811   11.00   19.25"
        "      0\n"
        "  4294967296    1073741824     float     sum      -1   389128   11.04   19.32      0   389203   11.04   19.31"
        "      0\n"
        "  8589934592    2147483648     float     sum      -1   778094   11.04   19.32      0   778311   11.04   19.31"
        "      0\n"
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 19.2954\n#\n")
IBSTAT = ("CA 'mlx5_0'\n\tCA type: MT4123\n\tNumber of ports: 1\n\tFirmware version: 20.31.1014\n\tPort 1:\n"
          "\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 100\n\t\tBase lid: 12\n\t\tSM lid: 1\n"
          "\t\tLink layer: InfiniBand\n")
TREE_NOTE = table().busbw_note + ", as is one on more than two nodes, where the tree's saving is gone"


def _ranks(hosts: list[str], per_host: int = 4) -> str:
    lines, rank = [], 0
    for host in hosts:
        for device in range(per_host):
            lines.append(f"#  Rank {rank:2d} Group  0 Pid  {41230 + rank} on {host:>10} device  {device} [0x{24 + device:02x}] "
                         "NVIDIA H100 PCIe\n")
            rank += 1
    return "".join(lines)


def _paste(hosts: list[str], algo: str | None = None, rows: str = ROWS) -> str:
    env = f"{hosts[0]}:41230:41301 [0] NCCL INFO NCCL_ALGO set by environment to {algo}\n" if algo else ""
    return HEADER + _ranks(hosts) + env + COLUMNS + rows + IBSTAT


def test_a_two_node_table_above_one_nics_rate_is_no_fault_and_says_the_tree(tmp_path):
    rc, d, _path = diagnose_json(tmp_path, _paste(["node-a", "node-b"]))
    assert rc == 0 and d["verdict"] == "healthy" and d["findings"] == []  # never a fault from it
    bw = d["bandwidth"]
    old = {"measured_gbs": 19.32, "expected_gbs": 12.5, "ratio": 1.546, "verdict": "at_limit", "nics": 1,
           "line_gbps": 100.0, "basis": "peak busbw at large sizes", "above_line_rate": "tree_two_nodes", "note": TREE_NOTE}
    assert {k: bw[k] for k in old} == old
    assert (bw["hardware"], bw["limit"]) == ("at_limit", "NICs")  # within the tree's 2x on two nodes (ceiling.py)
    assert bw["hardware_note"] == (
        "19.32 GB/s across 2 nodes is past what a ring over NICs carries (about 12.5 GB/s: 1 NIC per node x 100 Gb/s "
        "each (12.5 GB/s)) yet within 25 GB/s (NCCL's tree on two nodes: up to ~2x the network (NVIDIA/nccl#946)): at "
        "the hardware's limit, not a fault; to measure the network, rerun with NCCL_ALGO=Ring")
    assert TREE_NOTE.startswith("a busbw above the NIC's line rate is not a fault.")
    assert "rerun all_reduce_perf with NCCL_ALGO=Ring" in TREE_NOTE
    assert phrase(d["bandwidth"], False) == (
        "busbw is 19.32 GB/s (peak busbw at large sizes), about 155% of what 1x100G can carry (12.5 GB/s): " + TREE_NOTE)


@pytest.mark.parametrize(("hosts", "algo", "reason"), [
    (["node-a", "node-b"], "Ring", "ring_only"),  # a ring cannot exceed its NICs: more NICs than the text shows
    (["node-a", "node-b"], "NVLS,Ring", "in_network"),
    (["node-a", "node-b"], "^Tree", "in_network"),  # the tree excluded: NVLS/CollNet are what is left above a ring
    (["node-a", "node-b"], "Tree,Ring", "tree_two_nodes"),
    (["n1", "n2", "n3", "n4"], None, "beyond_two_nodes"),  # the tree's saving is a two-node effect
])
def test_the_reason_follows_the_runs_nodes_and_nccl_algo(tmp_path, hosts, algo, reason):
    _rc, d, _path = diagnose_json(tmp_path, _paste(hosts, algo))
    assert d["bandwidth"]["above_line_rate"] == reason and d["bandwidth"]["verdict"] == "at_limit"
    assert d["bandwidth"]["note"] == table().busbw_above_notes[reason]
    assert "not a fault" in d["bandwidth"]["note"] and d["findings"] == []


@pytest.mark.parametrize("scale", ["19.32", "3.10"])  # above the NICs' rate, and far below it
def test_one_hosts_run_is_not_measured_against_the_nics(tmp_path, scale):
    # 4x H100 PCIe on one host: the ring crosses PCIe, whose GPU link bounds it (Gen5 x16, 63 GB/s each way); what
    # a path through the CPU carries below that is not modelled (busbw_ceiling, issue 28), so it is not judged.
    rows = ROWS.replace("19.32", scale).replace("19.31", scale).replace("19.21", scale).replace("19.25", scale)
    _rc, d, _path = diagnose_json(tmp_path, _paste(["node-a"], rows=rows))
    note = (ONE_HOST + "; PCIe carries at most 63 GB/s on 4x H100-PCIe (the GPU's PCIe Gen5 x16 link, 32 GT/s (48 GB/s "
            "in NCCL's model); what a path through a PCIe switch or the CPU carries below that is not modelled): "
            f"{float(scale):g} GB/s is within it, and below the bound it is not judged")
    shown = {k: d["bandwidth"][k] for k in ("measured_gbs", "expected_gbs", "ratio", "verdict", "nics", "line_gbps",
                                            "basis", "note", "hardware", "limit")}
    assert shown == {"measured_gbs": float(scale), "expected_gbs": None, "ratio": None, "verdict": "intra_node",
                     "nics": 1, "line_gbps": 100.0, "basis": "peak busbw at large sizes", "note": note,
                     "hardware": "unknown", "limit": None}
    assert phrase(d["bandwidth"], False) == f"busbw is {float(scale):g} GB/s (peak busbw at large sizes): {note}"
    assert d["findings"] == []


def test_above_twice_the_rate_on_two_nodes_is_more_than_the_tree_gains(tmp_path):
    rows = ROWS.replace("19.32", "26.10").replace("19.31", "26.05").replace("19.21", "25.90").replace("19.25", "25.95")
    _rc, d, _path = diagnose_json(tmp_path, _paste(["node-a", "node-b"], rows=rows))
    assert (d["bandwidth"]["ratio"], d["bandwidth"]["above_line_rate"]) == (2.088, "beyond_tree")
    assert d["bandwidth"]["note"].startswith("a busbw above twice the NICs' line rate on two nodes is more than NCCL's "
                                             "tree gains there")


def test_at_or_near_the_rate_says_nothing_more(tmp_path):
    rows = ROWS.replace("19.32", "13.05").replace("19.31", "13.0").replace("19.21", "12.9").replace("19.25", "12.95")
    _rc, d, _path = diagnose_json(tmp_path, _paste(["node-a", "node-b"], rows=rows))
    assert d["bandwidth"]["ratio"] == 1.044 and "note" not in d["bandwidth"] and "above_line_rate" not in d["bandwidth"]


def test_the_margin_and_the_reasons():
    # 5% above the line rate: no ring over those NICs gives it (domain.BUSBW_ABOVE_LINE).
    assert busbw_above_reason(1.049, 2, None) is None and busbw_above_reason(None, 2, None) is None
    assert busbw_above_reason(1.05, 2, None) == "tree_two_nodes" and busbw_above_reason(1.6, None, None) == "tree_two_nodes"
    assert busbw_above_reason(2.01, 2, None) == "beyond_tree" and busbw_above_reason(1.2, 3, None) == "beyond_two_nodes"
    assert busbw_above_reason(1.2, 8, frozenset({"nvls", "ring"})) == "in_network"
    assert set(table().busbw_above_notes) == set(BUSBW_ABOVE_REASONS)
    assert above_note(0.93, 2, None) == {}


def test_nccl_algo_is_read_as_nccl_parses_it():
    # src/graph/tuning.cc parseList: `;` entries, an optional `function:` prefix, `^` to exclude, names case-blind.
    assert allreduce_algos("Ring") == {"ring"} and allreduce_algos("tree,RING") == {"tree", "ring"}
    assert allreduce_algos("^tree") == {"ring", "pat", "nvls", "nvlstree", "collnet", "collnetdirect", "collnetchain"}
    assert allreduce_algos("ring;allgather:pat") == {"ring"}
    assert allreduce_algos("allgather:ring;allreduce:nvls,tree") == {"nvls", "tree"}
    assert allreduce_algos("CollNet") == {"collnet"}  # NCCL 2.7-2.12's name
    assert allreduce_algos("bogus") is None and allreduce_algos(None) is None and allreduce_algos("") is None


def test_validate_says_why_its_own_run_is_above_the_rate():
    plan = Plan(nodes=["gpu01", "gpu02"], source="test", launcher="srun", ranks_per_node=4, min_bytes=536870912,
                max_bytes=8589934592, factor=2, interval=1.0, max_seconds=60.0)
    rounds = [{"step": None, "nodes": {n: {"nics": 1, "line_gbps": 100.0, "numbers": {}} for n in plan.nodes}}]
    steps = [{"name": "all_reduce_perf", "argv": ["srun", "all_reduce_perf"], "output": "steps/00-all_reduce_perf.out"}]
    judge = _Judge(plan, rounds, steps, {0: HEADER + _ranks(plan.nodes) + COLUMNS + ROWS}, None)
    assert judge.bandwidth() == "at_limit"
    step = judge.d.path[-1]
    assert (step.node, step.outcome) == ("validate.busbw", "no")  # no shortfall: never a fault
    assert step.value["all_reduce_perf"]["above_line_rate"] == "tree_two_nodes"
    assert step.means.endswith(f"; {TREE_NOTE}; against the ceiling: 19.32 GB/s across 2 nodes is past what a ring "
                               "over NICs carries (about 12.5 GB/s: 1 NIC per node x 100 Gb/s each (12.5 GB/s)) yet "
                               "within 25 GB/s (NCCL's tree on two nodes: up to ~2x the network (NVIDIA/nccl#946)): at "
                               "the hardware's limit, not a fault; to measure the network, rerun with NCCL_ALGO=Ring")
