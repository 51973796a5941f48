"""General weaknesses of the evidence reading (issue 12, dev5): kernel lines pasted alone, the lines a
differential step cites against a cause, aws-ofi-nccl's INFO chatter, NCCL 2.27+'s out-of-band and
bootstrap lines, HTTP clients' connection errors, and a bare watchdog timeout. Each rule cites its
primary source beside it; every line here is in the shape its version prints."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import facts


def _ranked(d: dict) -> list[str]:
    return [f["cause"] for f in d["findings"]]


def _kinds(tmp_path, text: str) -> set[str]:
    return set(facts(tmp_path, text)["log.nccl"]["errors"])


# -- aws-ofi-nccl: its INFO lines are init chatter, not errors ------------------------------------
# NCCL_OFI_INFO messages at v1.3.0, v1.7.4-aws, v1.14.0 and v1.21.1 (src/nccl_ofi_net.c(pp)), as a
# paste without NCCL's prefix shows them: the plugin prefixes every message with "NET/OFI ".
OFI_INFO = [
    "NET/OFI Using aws-ofi-nccl 1.7.4-aws",
    "NET/OFI Selected Provider is efa (found 4 nics)",
    "NET/OFI Selected provider is efa, fabric is efa (found 32 nics)",
    "NET/OFI Using Libfabric version 1.18",
    "NET/OFI Setting FI_OPT_MAX_MSG_SIZE not supported.",
    "NET/OFI Support for DMA-BUF registrations: false",
    "NET/OFI Creating one domain per process",
    "NET/OFI Using transport protocol RDMA (platform set)",
    "NET/OFI Could not disable CUDA API usage for HMEM, disabling GDR",
]


@pytest.mark.parametrize("line", OFI_INFO)
def test_an_ofi_info_line_is_no_error(line):
    sig = signatures.match(line)
    assert sig is not None and sig.kind == "ofi_plugin_running", (line, sig and sig.kind)


def test_bare_ofi_init_lines_give_no_blocking_candidate(tmp_path):
    _, d, _ = _diagnose(tmp_path, "\n".join(OFI_INFO[:2]) + "\n")
    assert not any(f["cause"] == "efa_ofi_misconfigured" for f in d["findings"])
    assert "ofi_error" not in _kinds(tmp_path, "\n".join(OFI_INFO) + "\n")


@pytest.mark.parametrize("line, kind", [
    # NCCL_OFI_WARN messages (v1.3.0 nccl_ofi_net.c; v1.21.1 nccl_ofi_rdma.cpp, nccl_ofi_net.cpp)
    ("create_nccl_ofi_component:459 NCCL WARN NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid argument", "ofi_error"),
    ("NET/OFI Initializing plugin failed", "ofi_error"),
    ("NET/OFI Creating domain failed: -12", "ofi_error"),
    ("NET/OFI Unable to find a protocol that worked.  Failing initialization.", "ofi_no_provider"),
    ("NET/OFI Endpoint does not support RMA operations, required for RDMA protocol!", "ofi_no_provider"),
])
def test_ofi_warn_lines_stay_errors(line, kind):
    assert signatures.match(line).kind == kind


def test_bare_ofi_info_lines_say_the_plugin_runs_and_name_no_cause(tmp_path):
    rc, d, _ = _diagnose(tmp_path, "\n".join(OFI_INFO[:3]) + "\n")
    assert d["findings"] == [] and d["verdict"] == "inconclusive"
    assert facts(tmp_path, OFI_INFO[1] + "\n")["log.nccl"]["errors"]["ofi_plugin_running"]["blocking"] is False


# -- kernel lines pasted alone: a candidate, or what the line says and what to paste -------------
# (the trunk's peermem and AER checks want the node's GPUs and PCI tree, which a dmesg paste lacks)
def test_a_lone_peermem_error_names_gpudirect_rdma(tmp_path):
    line = "[Thu Sep 19 02:29:46 2024] nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing\n"
    rc, d, path = _diagnose(tmp_path, line)
    first = d["findings"][0]
    assert (first["cause"], first["confidence"]) == ("gdr_disabled", "medium")
    assert first["supporting"] == [f"{path}:1: {line.strip()}"]
    assert first["next_step"].startswith("paste `lsmod | grep -e nvidia_peermem -e nv_peer_mem`")


def test_a_lone_uncorrectable_aer_names_pcie_aer_errors(tmp_path):
    text = ("[ 5678.123] pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0\n"
            "[ 5678.124] pcieport 0000:00:01.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)\n")
    _, d, _ = _diagnose(tmp_path, text)
    assert _ranked(d)[0] == "pcie_aer_errors"
    assert d["findings"][0]["next_step"].startswith("paste `lspci -vvv` (or `lspci -tv`)")


def test_a_corrected_aer_alone_names_no_cause(tmp_path):
    text = "[ 5678.123] pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n"
    _, d, _ = _diagnose(tmp_path, text)
    assert d["findings"] == []


def test_a_lone_mlx5_health_event_says_what_it_means_and_what_to_paste(tmp_path):
    line = "[   17.982092] mlx5_core 0000:41:00.0: poll_health:852:(pid 0): device's health compromised - reached miss count\n"
    rc, d, path = _diagnose(tmp_path, line)
    assert d["findings"] == [] and d["verdict"] == "inconclusive" and d["healthy"] is None
    reasons = [i["reason"] for i in d["inconclusive"] if i["node"] == "evidence"]
    assert reasons[0] == (f"{path}:1: the mlx5 adapter's firmware stopped answering (its health counter stalled, a "
                          "fatal sensor, a command timed out): the driver resets or unloads the device, and its RDMA "
                          "ports stop carrying traffic; no cause of the catalogue covers it")
    assert reasons[1].startswith("nothing in this text points at a cause; paste")
