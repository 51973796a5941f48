"""Issue 30 item 12: a parser refuses another tool's output that looks like its own, in one line.

Real shapes (each fixture's header names its source):
- `nvidia-smi nvlink -e`: github.com/stas00/ml-engineering network/README.md;
- `perfquery -x 10 1,2`: the infiniband-diags issue 16 dump, one block a port (perfquery(8));
- AWS Neuron `nccom-test all_reduce`: github.com/aws-samples/awsome-distributed-training
  micro-benchmarks/nccom-tests/slurm/README.md.
"""

from __future__ import annotations

import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse
from tests.evidence.helpers import load_text
from tests.parsers.conftest import read_fixture


def test_nvlink_error_counters_are_not_read_as_link_speeds():
    """Read as -s, every `Link N: Replay Errors: 0` was a link with no speed: all_inactive on a healthy H100."""
    with pytest.raises(ParseError) as err:
        parse("nvidia_smi_nvlink", read_fixture("nvidia-smi-nvlink-e-h100-error-counters.txt"))
    assert str(err.value) == ("expected nvidia-smi nvlink -s, got nvidia-smi nvlink -e (error counters): "
                              "'Link 0: Replay Errors: 0'; paste `nvidia-smi nvlink -s` for the link speeds")


def test_nvlink_s_with_inactive_links_still_reads():
    text = "GPU 0: NVIDIA A100 (UUID: GPU-1)\n\t Link 0: 25 GB/s\n\t Link 1: <inactive>\n"
    assert parse("nvidia_smi_nvlink", text)["gpus"]["0"]["links"] == {"0": 25.0, "1": None}


def test_perfquery_of_two_ports_is_refused_not_folded():
    """Folded, port 2's SymbolErrorCounter 1234 became the one port's value."""
    with pytest.raises(ParseError) as err:
        parse("perfquery", read_fixture("perfquery-x-two-ports.txt"))
    assert str(err.value) == ("expected the perfquery counters of one port, got 2 ports (PortSelect 1, 2): "
                              "run `perfquery -x LID PORT` once a port")


def test_perfquery_of_one_port_still_reads():
    assert parse("perfquery", read_fixture("perfquery-x-extended-zero.txt"))["symbol_error"] == 0


def test_nccom_test_table_is_not_a_completed_nccl_tests_run(tmp_path):
    result = load_text(tmp_path, read_fixture("nccom-test-all_reduce-trn1-slurm.txt"))
    tests = {o.fact: o.value for o in result.observations}["log.tests"]
    assert tests == {"runs": [], "main": None}
    refused = [t for t in result.report["tool_outputs"] if t["tool"] == "nccom_test"]
    assert refused == [{"tool": "nccom_test", "lines": f"{tmp_path / 'paste.txt'}:1-19", "parsed": False, "error": (
        "expected nccl-tests output, got AWS Neuron nccom-test (size(B)/count(elems) table, Avg bus bandwidth "
        "in GB/s): Neuron collectives are not NCCL, so this run is not judged; paste all_reduce_perf output")}]


def test_nccl_tests_average_line_is_still_read(tmp_path):
    text = ("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
            "   8589934592    2147483648     float     sum      -1    34719  247.41  463.90      0    34720  247.41  463.89      0\n"
            "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 458.452 \n#\n")
    result = load_text(tmp_path, text)
    main = {o.fact: o.value for o in result.observations}["log.tests"]["main"]
    assert (main["avg_busbw"], main["completed"]) == (458.452, True)


def test_a_refused_output_is_named_in_the_text_report():
    from allreduce_doctor.report import _evidence_used
    used = {"files": [], "tool_outputs": [{"tool": "perfquery", "lines": "p.txt:2-53", "parsed": False,
                                           "error": "expected one port"}]}
    assert _evidence_used(used) == ["", "Evidence read:", "  not read: perfquery at p.txt:2-53: expected one port"]
