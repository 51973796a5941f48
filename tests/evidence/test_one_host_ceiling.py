"""A one-host nccl-tests table is judged against what its GPUs' links carry (issue 28), not called "no yardstick":
8x H100 SXM at 468 GB/s is NVLink's limit (NVLS: ~480 GB/s on 8 GPUs, sjeaugey in NVIDIA/nccl-tests#212), the
same node at 120 GB/s is a quarter of it, a table whose devices name no model says what would tell."""

from __future__ import annotations

import pytest

from allreduce_doctor.busbw import ONE_HOST
from tests.evidence.helpers import ROOT, diagnose_json, fixture_body

TABLES = ROOT / "tests" / "fixtures" / "ceiling"  # nccl-tests tables; each file's header cites its source
AT_LIMIT = fixture_body(TABLES / "nccl-tests-all_reduce_perf-8gpu-h100-sxm-at-nvls-limit.txt")
QUARTER = fixture_body(TABLES / "nccl-tests-all_reduce_perf-8gpu-h100-sxm-quarter-of-nvlink.txt")
UNNAMED = fixture_body(TABLES / "nccl-tests-all_reduce_perf-8gpu-unnamed-device.txt")
def _scaled(text: str, factor: float) -> str:
    """The table with every algbw and busbw times factor (columns 7, 8, 11, 12 of a row) and its time over it."""
    out = []
    for line in text.splitlines():
        tokens = line.split()
        if len(tokens) == 13 and tokens[0].isdigit():
            for i in (6, 7, 10, 11):
                tokens[i] = f"{float(tokens[i]) * factor:.2f}"
            for i in (5, 9):
                tokens[i] = f"{float(tokens[i]) / factor:.1f}"
            line = "  ".join(tokens)
        out.append(line)
    return "\n".join(out) + "\n"


WHY = "every rank of this run is on one host: NVLink or PCIe (P2P, SHM) carry it, not the NICs. "


def test_8x_h100_sxm_at_468_is_the_hardware_limit_with_its_ceiling(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, AT_LIMIT)
    assert d["verdict"] == "healthy" and d["healthy"]["id"] == "expected_hardware_limit"
    assert d["healthy"]["node"] == "nccl_log.one_host_limit" and d["findings"] == []
    bw = d["bandwidth"]
    assert (bw["verdict"], bw["hardware"], bw["limit"], bw["expected_gbs"], bw["ratio"]) == (
        "intra_node", "at_limit", "NVLink (NVLS)", 480.0, 0.975)
    assert bw["note"] == (WHY + "NVLink (NVLS): 468 of about 480 GB/s on 8x H100-SXM (NVLS on 8 GPUs: 480 GB/s "
                          "published): at the hardware's limit, not a fault")
    assert bw["ceiling"]["model_from"] == "the GPUs' names" and "nccl_tests_212" in bw["ceiling"]["sources"]


def test_the_same_node_at_120_is_below_by_how_much_and_names_what_should_carry_it(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, QUARTER)
    assert d["healthy"] is None or d["healthy"]["id"] != "expected_hardware_limit"
    bw = d["bandwidth"]
    assert (bw["hardware"], bw["expected_gbs"], bw["ratio"]) == ("below", 480.0, 0.25)
    assert bw["note"].startswith(WHY + "NVLink (NVLS): 120 of about 480 GB/s on 8x H100-SXM (NVLS on 8 GPUs: 480 GB/s "
                                 "published), 75% below what it should carry; what can hold NVLink (NVLS) back: ")


def test_at_the_rings_figure_nvls_is_what_is_missing(tmp_path):
    rows = _scaled(AT_LIMIT, 365 / 468)  # a peak of 365 GB/s
    _rc, d, _ = diagnose_json(tmp_path, rows)
    assert d["bandwidth"]["hardware"] == "below"
    assert "that is the ring's figure (370.8 GB/s): NVLS is likely not in use" in d["bandwidth"]["note"]
    ring = "jo-dau5moatnhdynmy6-worker-0:313:313 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n" + rows  # NCCL told to run the ring
    _rc, d, _ = diagnose_json(tmp_path, ring)
    assert (d["bandwidth"]["hardware"], d["bandwidth"]["limit"], d["bandwidth"]["expected_gbs"]) == (
        "at_limit", "NVLink", 370.8)


def test_more_than_the_hardware_carries_is_a_measurement_that_cannot_be(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, _scaled(AT_LIMIT, 2.0))  # 936 GB/s
    assert d["bandwidth"]["hardware"] == "above_hardware" and d["bandwidth"]["ratio"] == 1.189
    assert (d["healthy"] or {}).get("id") != "expected_hardware_limit"
    assert "936 GB/s is more than NVLink (NVLS) can carry on 8x H100-SXM (at most 787.5 GB/s): a measurement " \
           "that cannot be; likely algbw read as busbw" in d["bandwidth"]["note"]


def test_a_table_that_names_no_model_stays_not_known_and_says_what_to_paste_or_answer(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, UNNAMED)
    bw = d["bandwidth"]
    assert (bw["hardware"], bw["expected_gbs"], bw["ratio"], bw["limit"]) == ("unknown", None, None, None)
    assert bw["note"].startswith(ONE_HOST + "; what the GPUs' links carry is not known: the GPU model: paste the "
                                 "nccl-tests header with its `#  Rank ... device` lines or `nvidia-smi -L`, or answer "
                                 "--answer gpu_model=H100-SXM")
    _rc, d, _ = diagnose_json(tmp_path, UNNAMED, "--answer", "gpu_model=H100-SXM")
    assert (d["bandwidth"]["hardware"], d["bandwidth"]["expected_gbs"], d["bandwidth"]["ceiling"]["model_from"]) == (
        "below", 480.0, "--answer gpu_model")


def test_an_answer_outside_the_table_is_refused(tmp_path):
    from allreduce_doctor.errors import DoctorError
    from allreduce_doctor.session import parse_answers

    with pytest.raises(DoctorError, match="expected a GPU model of the ceiling table"):
        parse_answers(["gpu_model=RTX-4090"], {})
    assert parse_answers(["gpu_model=H100-SXM", "nvswitch=yes", "nvlink_links=18"], {}) == {
        "gpu_model": "H100-SXM", "nvswitch": "yes", "nvlink_links": "18"}


def test_a_real_8x_a100_sxm4_table_at_232_is_nvlinks_limit(tmp_path):
    # A public nccl-tests how-to's table (fixture header): the author expected ~240 GB/s, 80% of NVLink 3's 300.
    real = fixture_body(TABLES / "nccl-tests-all_reduce_perf-8gpu-a100-nvlink.txt")
    _rc, d, _ = diagnose_json(tmp_path, real)
    assert d["healthy"]["id"] == "expected_hardware_limit" and d["healthy"]["node"] == "nccl_log.one_host_limit"
    assert (d["bandwidth"]["hardware"], d["bandwidth"]["expected_gbs"], d["bandwidth"]["ratio"]) == ("at_limit", 240.0, 0.969)
    assert "NVLink: 232.44 of about 240 GB/s on 8x A100-SXM4 (12 NVLink 3 links x 20.0 GB/s" in d["bandwidth"]["note"]


@pytest.mark.parametrize(("name", "model", "peak", "verdict", "ceiling"), [
    ("NVIDIA H200", "H200-SXM", 475.0, "at_limit", 480.0),  # NVIDIA/nccl-tests#272's 475 GB/s, NCCL 2.20.3
    ("NVIDIA H200", "H200-SXM", 240.0, "below", 480.0),
    ("NVIDIA H200", "H200-SXM", 850.0, "above_hardware", 480.0),  # past 2(n-1)/n x 450 x 1.05
    ("NVIDIA H20", "H20", 360.0, "at_limit", 370.8),  # no published NVLS figure: the ring's 18 x 20.6
    ("NVIDIA B200", "B200", 830.0, "at_limit", 721.8),  # NVIDIA/nccl#1807's 830+: above the ring, within the bound
    ("NVIDIA B200", "B200", 300.0, "below", 721.8),
    ("NVIDIA A100-SXM4-40GB", "A100-SXM4", 120.0, "below", 240.0),
    ("NVIDIA A100-SXM4-40GB", "A100-SXM4", 400.0, "above_hardware", 240.0),  # no NVLS on A100: past 300 x 1.05
])
def test_each_hardware_class_at_below_and_above_its_ceiling(tmp_path, name, model, peak, verdict, ceiling):
    text = _scaled(AT_LIMIT, peak / 468).replace("NVIDIA H100 80GB HBM3", name)
    _rc, d, _ = diagnose_json(tmp_path, text)
    bw = d["bandwidth"]
    assert (bw["ceiling"]["gpu_model"], bw["hardware"], bw["expected_gbs"]) == (model, verdict, ceiling)
    assert ((d["healthy"] or {}).get("id") == "expected_hardware_limit") == (verdict == "at_limit")


def test_a_pasted_nvidia_smi_nvlink_names_the_model_and_its_active_links(tmp_path):
    nvlink = fixture_body(ROOT / "tests" / "fixtures" / "outputs" / "nvidia-smi-nvlink-s-a100-8gpu.txt")
    _rc, d, _ = diagnose_json(tmp_path, _scaled(UNNAMED, 232 / 300) + nvlink)  # 8x A100-SXM4-80GB, 12 links each
    bw = d["bandwidth"]
    assert (bw["ceiling"]["gpu_model"], bw["hardware"], bw["expected_gbs"]) == ("A100-SXM4", "at_limit", 240.0)
    down = nvlink.replace("         Link 11: 25 GB/s\n", "         Link 11: <inactive>\n", 1)  # GPU 0 lost a link
    _rc, d, _ = diagnose_json(tmp_path, _scaled(UNNAMED, 232 / 300) + down)
    assert d["bandwidth"]["expected_gbs"] == 220.0  # 11 x 20.0: the ring runs at its slowest GPU's links
