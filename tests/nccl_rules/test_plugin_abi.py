"""The ncclNetPlugin_vN versions each NCCL release looks up (read at every tag of NVIDIA/nccl), what
a plugin's exports settle on, and what the log's plugin search says."""

from __future__ import annotations

import pytest

from allreduce_doctor.nccl_rules import plugin_abi


@pytest.mark.parametrize(("version", "tried"), [
    ((2, 4, 8), (2,)), ((2, 5, 7), (2,)), ((2, 6, 4), (3,)), ((2, 7, 8), (3,)), ((2, 8, 3), (4,)),
    ((2, 11, 4), (4,)), ((2, 12, 12), (5, 4)), ((2, 13, 4), (6, 5, 4)), ((2, 18, 6), (6, 5, 4)),
    ((2, 19, 3), (7, 6, 5)), ((2, 20, 3), (8, 7, 6, 5)), ((2, 23, 4), (8, 7, 6, 5)), ((2, 24, 3), (9, 8, 7, 6, 5)),
    ((2, 25, 1), (9, 8, 7, 6, 5)), ((2, 26, 2), (10, 9, 8, 7, 6)), ((2, 27, 7), (10, 9, 8, 7, 6)),
    ((2, 28, 3), (11, 10, 9, 8, 7, 6)), ((2, 29, 7), (11, 10, 9, 8, 7, 6)), ((2, 30, 7), (12, 11, 10, 9, 8, 7, 6)),
])
def test_each_release_looks_up_the_versions_its_source_lists(version, tried):
    assert plugin_abi.tried(version) == tried


@pytest.mark.parametrize("version", [None, (2, 3, 7), (2, 31, 1), (3, 0, 0), (2,)])
def test_a_release_not_read_looks_up_unknown_versions(version):
    assert plugin_abi.tried(version) is None


def test_nccl_settles_on_the_newest_version_both_know():
    exports = plugin_abi.exported(["ncclNetPlugin_v6", "ncclNetPlugin_v12", "ncclNetPlugin_v8", "ncclCollNetPlugin_v9"])
    assert exports == (12, 8, 6)
    assert plugin_abi.chosen((8, 7, 6, 5), exports) == 8
    assert plugin_abi.chosen((5, 4), exports) is False  # NCCL 2.12 with aws-ofi-nccl 1.21: closed
    assert plugin_abi.chosen(None, exports) is None and plugin_abi.chosen((5, 4), None) is None


def test_a_failed_version_is_a_mismatch_only_when_nccl_ends_on_its_own_transport():
    assert plugin_abi.from_log({"failed": [8], "unsupported": False, "loaded": None}, "AWS Libfabric") is None
    said = plugin_abi.from_log({"failed": [8], "unsupported": False, "loaded": None}, "Socket")
    assert said == {"mismatch": True, "why": "the log's plugin search found no interface version this NCCL looks up "
                                             "(not found: v8); it runs on Socket"}
    assert plugin_abi.from_log({"failed": [8], "unsupported": False, "loaded": 7}, "Socket")["mismatch"] is False
    assert plugin_abi.from_log({"failed": [], "unsupported": True, "loaded": None}, "")["mismatch"] is True
    assert plugin_abi.from_log({"failed": [], "unsupported": False, "loaded": None}, "Socket") is None
