"""The Diagnosis's own busbw comparison reaches the ticket with its note: a one-host run's busbw is not
measured against the NICs (they do not carry it), and a ticket must not say "58% of expected" of it."""

from __future__ import annotations

import json

from allreduce_doctor.busbw import ONE_HOST
from allreduce_doctor.export import extract, render_export
from tests.evidence.helpers import diagnose_json

ONE_HOST_RUN = """\
#  Rank  0 Group  0 Pid  54740 on     thanos device  0 [0x07] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid  54740 on     thanos device  1 [0x0a] NVIDIA A100-SXM4-80GB
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
  4294967296    1073741824     float     sum      -1    18478  232.44  232.44      0    18482  232.38  232.38      0
# Avg bus bandwidth    : 101.5
CA 'mlx5_0'
	CA type: MT4129
	Number of ports: 1
	Port 1:
		State: Active
		Physical state: LinkUp
		Rate: 400
		Link layer: InfiniBand
"""


# Two A100 SXM4 of one host: an 8-GPU HGX board (NVSwitch) or the 4-GPU one (direct links) carry it differently,
# and the text does not say which (busbw_ceiling, issue 28): the note says what decides it.
NOTE = (ONE_HOST + "; what the GPUs' links carry is not known: whether the 2 GPUs sit on NVSwitch (an 8-GPU HGX "
        "board) or on direct NVLink links: paste `nvidia-smi topo -m` or `nvidia-smi -q` (Fabric), or answer "
        "--answer nvswitch=yes")


def test_a_one_host_runs_busbw_goes_to_the_ticket_with_why_no_nic_rate_bounds_it(tmp_path):
    _rc, d, _path = diagnose_json(tmp_path, ONE_HOST_RUN)
    assert d["bandwidth"]["verdict"] == "intra_node"
    assert extract.bandwidth(d) == {"measured": 232.44, "expected": None, "unit": "GB/s", "note": NOTE}
    text, shown = render_export(d, "markdown"), NOTE.replace("`", "\\`")  # markdown escapes the backticks
    assert f"- Bus bandwidth: {shown}." in text
    assert f"| Bus bandwidth | measured 232.44 GB/s, expected unknown; {shown} |" in text
    assert "of expected" not in text


def test_with_nvswitch_answered_the_ticket_gives_nvlinks_ceiling_as_expected(tmp_path):
    _rc, d, _path = diagnose_json(tmp_path, ONE_HOST_RUN, "--answer", "nvswitch=yes")
    assert d["bandwidth"]["hardware"] == "at_limit" and d["bandwidth"]["limit"] == "NVLink"
    assert extract.bandwidth(d)["expected"] == 240.0  # 12 NVLink 3 links x 20.0 GB/s (NCCL's SM80_NVLINK_BW)
    text = render_export(d, "markdown")
    assert "| Bus bandwidth | measured 232.44 GB/s, expected 240 GB/s; " in text
    assert "NVLink: 232.44 of about 240 GB/s on 2x A100-SXM4" in text


def test_without_the_diagnosis_comparison_the_evidence_rows_still_give_the_numbers():
    d = {"evidence": [{"fact": "node.busbw", "observed": {"measured_gbs": 90.0, "line_gbs": 100.0}}]}
    assert extract.bandwidth(json.loads(json.dumps(d))) == {"measured": 90.0, "expected": 100.0, "unit": "GB/s"}
