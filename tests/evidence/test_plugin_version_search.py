"""NCCL's net-plugin version search in a pasted log: a plugin with no version NCCL looks up is
net_plugin_version_mismatch; a failed newest version followed by a loaded older one is not."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_rc_json, step

P = "ip-10-0-1-11:4242:4301 [0] NCCL INFO "


def test_a_search_that_ends_with_no_version_is_a_mismatch(tmp_path):
    # NCCL 2.23.4 src/net.cc: v8 is reported, v7..v5 tried, then the search's last word
    text = (f"{P}NCCL version 2.23.4+cuda12.4\n{P}NET/Plugin: Failed to find ncclNetPlugin_v8 symbol.\n"
            f"{P}NET/Plugin: Failed to find ncclNetPlugin symbol (>= v5). ncclNetPlugin symbols v4 and lower are not supported.\n"
            f"{P}NET/Socket : Using [0]ens32:10.0.1.11<0>\n{P}Using network Socket\n")
    _, d = diagnose_rc_json(tmp_path, text)
    assert d["root_cause"]["id"] == "net_plugin_version_mismatch"
    assert step(d, "nccl_log.plugin_abi")["value"]["log.job.plugin_abi.why"] == (
        "the log's plugin search found no interface version this NCCL looks up (not found: v8); it runs on Socket")


def test_nccl_2_28_says_the_plugin_is_unsupported(tmp_path):
    text = (f"{P}NCCL version 2.28.9+cuda12.9\n"
            f"{P}External network plugin /opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so is unsupported\n")
    _, d = diagnose_rc_json(tmp_path, text)
    assert step(d, "nccl_log.plugin_abi")["outcome"] == "yes"


def test_an_older_version_loaded_after_a_failed_newer_one_is_no_mismatch(tmp_path):
    text = (f"{P}NCCL version 2.23.4+cuda12.4\n{P}NET/Plugin: Failed to find ncclNetPlugin_v8 symbol.\n"
            f"{P}NET/Plugin: Loaded net plugin AWS Libfabric (v7)\n{P}Using network AWS Libfabric\n")
    _, d = diagnose_rc_json(tmp_path, text)
    assert step(d, "nccl_log.plugin_abi")["outcome"] == "no"
    assert "net_plugin_version_mismatch" not in [f["cause"] for f in d["findings"]]
