"""Kernel lines pasted alone: a candidate (peermem, uncorrectable AER, a cable error, an Xid through
the trunk), or what the line says and what to paste (an mlx5 health event); corrected AER names
no cause."""

from __future__ import annotations

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import ranked as _ranked


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


def test_a_lone_cable_error_names_the_port_down(tmp_path):
    line = ("[ 3512.334] mlx5_core 0000:17:00.0: port_module:254:(pid 0): Port module event[error]: module 0, "
            "Cable error, Bad or shorted cable/module\n")
    _, d, _ = _diagnose(tmp_path, line)
    assert _ranked(d) == ["ib_port_down"]
    plugged = "[ 3512.334] mlx5_core 0000:17:00.0: port_module:254:(pid 0): Port module event: module 0, Cable plugged\n"
    assert signatures.match(plugged) is None


def test_a_lone_xid_is_decided_by_the_trunk(tmp_path):
    # The trunk's gpu_xid check reads kernel.events.xid alone (no pci.gpus gate): the guard of item 1.
    _, d, _ = _diagnose(tmp_path, "[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n")
    assert d["root_cause"]["id"] == "gpu_xid_errors"
