"""aws-ofi-nccl's INFO lines are init chatter, not errors; its WARN lines stay errors; a slow job whose
text only names the plugin shows no NCCL running, and the plugin's own INFO line speaks against
`net_plugin_not_loaded`."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import facts
from tests.evidence.helpers import ranked as _ranked


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


# -- a slow job whose text only names the OFI plugin: no NCCL line shows NCCL running -----------------
def test_a_named_plugin_without_nccl_lines_is_not_read_against_the_plugin(tmp_path):
    text = ("The container's LD_LIBRARY_PATH lacks /opt/amazon/aws-ofi-nccl/lib, so NCCL never loads the plugin.\n"
            "- `/opt/amazon/aws-ofi-nccl/lib` holds libnccl-net.so\n"
            "LD_LIBRARY_PATH=/usr/local/cuda/compat/lib:/usr/local/nvidia/lib\n")
    _, d, _ = _diagnose(tmp_path, text, "--symptom", "slow")
    assert _ranked(d)[0] == "net_plugin_not_loaded" and d["findings"][0]["contradicting"] == []
    assert "socket_fallback" not in _ranked(d)  # no NCCL line, so no "which network did it choose" question


def test_the_plugins_own_info_line_speaks_against_a_plugin_not_loaded(tmp_path):
    text = "The job mounts /opt/amazon/aws-ofi-nccl/lib into the pod.\nNET/OFI Selected Provider is efa (found 4 nics)\n"
    _, d, path = _diagnose(tmp_path, text)
    plugin = next(f for f in d["findings"] if f["cause"] == "net_plugin_not_loaded")
    assert plugin["contradicting"] == [f"{path}:2: NET/OFI Selected Provider is efa (found 4 nics): the OFI plugin's "
                                       "own line, so it loaded"]
