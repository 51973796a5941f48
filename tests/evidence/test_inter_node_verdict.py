"""A pasted multi-node nccl-tests table judged against the inter-node ceiling (issue 28), with the `--answer`
values reaching the walk's steps that end at expected_hardware_limit (job.ceiling, probes/derive_ceiling.py).

The table is real: 8 nodes x 8 H100 on CoreWeave InfiniBand with SHARP, peak busbw 386.56 GB/s at 8 GiB
(github.com/coreweave/nccl-tests README, tests/fixtures/outputs/nccl-tests); it shows neither its NICs nor its
hosts, so the answers give them."""

from __future__ import annotations

import pytest

from allreduce_doctor.busbw import phrase
from tests.evidence.helpers import ROOT, diagnose_json, fixture_body

SHARP = (ROOT / "tests" / "fixtures" / "outputs" / "nccl-tests" /
         "nccl-tests-all_reduce_perf-64gpu-h100-ib-sharp.txt").read_text()
ONE_HOST = fixture_body(ROOT / "tests" / "fixtures" / "ceiling" / "nccl-tests-all_reduce_perf-8gpu-h100-sxm-at-nvls-limit.txt")
NICS = ("--answer", "nics_per_node=8", "--answer", "nic_rate_gbps=400")
HOLD = ("what can hold it back: ports down or below their rate (`ibstat`), fewer NICs in use than the node has "
        "(NCCL_IB_HCA, the `NET/IB : Using` line), GPUDirect RDMA off (no `/GDRDMA` on the NET lines), a NIC's PCIe "
        "link trained low (`lspci -vvv` LnkSta), or loss and pauses on the fabric (RoCE: PFC, ECN)")


def test_without_the_nics_the_ceiling_is_not_known_and_says_which_answers_decide(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, SHARP)
    assert (d["healthy"] or {}).get("id") != "expected_hardware_limit"
    bw = d["bandwidth"]
    assert (bw["hardware"], bw["limit"]) == ("unknown", None)
    assert bw["hardware_note"] == (
        "what these nodes' NICs and links carry is not known: the NICs per node and their rate: paste `ibstat` of a "
        "node or NCCL_DEBUG=INFO `NET/IB : Using` lines, or answer --answer nics_per_node=8 --answer nic_rate_gbps=400")


def test_the_answers_reach_the_step_at_the_limit(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, SHARP, *NICS)
    assert d["verdict"] == "healthy" and d["healthy"]["id"] == "expected_hardware_limit"
    assert d["healthy"]["node"] == "nccl_log.hw_limit"
    bw = d["bandwidth"]
    assert (bw["hardware"], bw["limit"], bw["ceiling"]["ceiling_gbs"], bw["ceiling"]["nics_from"]) == (
        "at_limit", "NICs", 400.0, "--answer nics_per_node")
    assert bw["hardware_note"] == ("NICs: 386.56 of about 400 GB/s across nodes (8 NICs per node x 400 Gb/s each "
                                   "(50 GB/s)): at the hardware's limit, not a fault")
    assert phrase(bw, False) == "busbw is 386.56 GB/s (peak busbw at large sizes): " + bw["hardware_note"]


def test_the_same_table_on_faster_nics_is_below_by_how_much_and_what_holds_it_back(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, SHARP, "--answer", "nics_per_node=8", "--answer", "nic_rate_gbps=800")
    assert (d["healthy"] or {}).get("id") != "expected_hardware_limit"
    assert d["bandwidth"]["hardware_note"] == (
        "NICs: 386.56 of about 800 GB/s across nodes (8 NICs per node x 800 Gb/s each (100 GB/s)), 52% below what it "
        "should carry; " + HOLD + "; not known: each NIC's PCIe link: paste `lspci -vvv` of a node (LnkCap, LnkSta), "
        "or answer --answer nic_pcie_gen=5 --answer nic_pcie_width=16 (a slot that carries less than its port lowers "
        "this ceiling)")


def test_a_pcie_slot_below_the_ports_rate_lowers_the_ceiling(tmp_path):
    # 4x 800G in Gen5 x16 slots: each NIC carries 63 GB/s, not 100 (PCI-SIG rates)
    _rc, d, _ = diagnose_json(tmp_path, SHARP, "--answer", "nics_per_node=4", "--answer", "nic_rate_gbps=800",
                              "--answer", "nic_pcie_gen=5")
    assert d["bandwidth"]["ceiling"]["ceiling_gbs"] == 252.0  # 4 x min(100, Gen5 x16 63)
    assert d["bandwidth"]["hardware"] == "at_limit"  # past the ring, within the tree's 2x: the node count is unknown


def test_the_gpu_model_answer_reaches_the_one_host_step(tmp_path):
    unnamed = ONE_HOST.replace("NVIDIA H100 80GB HBM3", "NVIDIA Graphics Device")
    _rc, d, _ = diagnose_json(tmp_path, unnamed)
    assert (d["healthy"] or {}).get("id") != "expected_hardware_limit" and d["bandwidth"]["hardware"] == "unknown"
    _rc, d, _ = diagnose_json(tmp_path, unnamed, "--answer", "gpu_model=H100-SXM")
    assert d["healthy"]["id"] == "expected_hardware_limit" and d["healthy"]["node"] == "nccl_log.one_host_limit"
    assert d["bandwidth"]["ceiling"]["model_from"] == "--answer gpu_model"


@pytest.mark.parametrize(("answer", "message"), [
    ("gdr=maybe", "--answer gdr=maybe: expected yes or no"),
    ("nic_rate_gbps=fast", "--answer nic_rate_gbps=fast: expected a NIC's line rate in Gb/s, e.g. nic_rate_gbps=400"),
    ("nics_per_node=x", "--answer nics_per_node=x: expected a number, e.g. nics_per_node=5"),
])
def test_a_bad_answer_is_one_clear_line(tmp_path, capsys, answer, message):
    from allreduce_doctor.cli import main

    path = tmp_path / "paste.txt"
    path.write_text(SHARP)
    rc = main(["diagnose", "--evidence", str(path), "--answer", answer])
    err = capsys.readouterr().err
    assert rc != 0 and err.strip().splitlines() == [f"allreduce-doctor: error: {message}"]


def test_a_table_without_large_sizes_gets_one_sentence_and_no_verdict(tmp_path):
    from allreduce_doctor.busbw import SMALL_ONLY

    small = "\n".join(line for line in ONE_HOST.splitlines()
                      if not (line.split() and line.split()[0].isdigit() and int(line.split()[0]) > 524288)) + "\n"
    _rc, d, _ = diagnose_json(tmp_path, small)
    bw = d["bandwidth"]
    assert bw["basis"] == "average busbw over all sizes" and (bw["hardware"], bw["limit"]) == ("unknown", None)
    assert bw["note"] == SMALL_ONLY and (d["healthy"] or {}).get("id") != "expected_hardware_limit"
    assert SMALL_ONLY.startswith("the table has no message size from 32 MiB up, and small sizes are latency-bound")
