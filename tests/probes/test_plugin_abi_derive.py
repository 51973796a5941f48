"""nccl.net_plugin.abi from the job's view: the library it maps, else the one its dlopen finds."""

from __future__ import annotations

from allreduce_doctor.probes.derive_plugin import abi

OLD = "/opt/aws-ofi-nccl/lib/libnccl-net.so"


def _job(**changes) -> dict:
    return {"mapped": [], "opened": [OLD], "plugin_on_path": [OLD], "exports": {OLD: ["ncclNetPlugin_v4"]}, **changes}


def test_a_plugin_on_the_path_with_no_version_nccl_looks_up_is_a_mismatch():
    out = abi(_job(), "2.23.4", {})
    assert out["mismatch"] is True and out["exports"] == [4] and out["tried"] == [8, 7, 6, 5]
    assert out["why"] == f"{OLD} defines v4; NCCL 2.23.4 looks up v8, v7, v6, v5: none match"


def test_the_newest_common_version_is_loaded():
    out = abi(_job(exports={OLD: ["ncclNetPlugin_v6", "ncclNetPlugin_v5"]}), "2.23.4", {})
    assert out["mismatch"] is False and out["why"].endswith("it loads v6")


def test_a_mapped_plugin_was_kept_so_nccl_found_its_version():
    out = abi(_job(mapped=[OLD], exports={OLD: None}), "2.23.4", {})
    assert out["mismatch"] is False and out["why"].startswith(f"the job maps {OLD}")


def test_unread_symbols_or_an_unknown_nccl_are_unknown():
    assert abi(_job(exports={OLD: None}), "2.23.4", {})["mismatch"] is None
    assert abi(_job(), "2.31.0", {})["mismatch"] is None
    assert abi(None, "2.23.4", {})["mismatch"] is None


def test_no_plugin_on_the_path_is_no_mismatch():
    assert abi(_job(opened=[], plugin_on_path=[], exports={}), "2.23.4", {})["mismatch"] is False
