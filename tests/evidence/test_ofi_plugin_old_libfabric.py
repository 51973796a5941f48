"""A net plugin refused for an old libfabric (NCCL's `NET/Plugin : dlerror=... version not found`)
is decided by the EFA step; a node with no plugin at all is no libfabric failure."""

from __future__ import annotations

import json

from tests.evidence.helpers import cli, facts

P = "ip-10-1-2-3:5120:5120 [0] "
# NCCL 2.19.3 src/net.cc ncclNetPluginInit: INFO "NET/Plugin : dlerror=%s No plugin found (%s), using
# internal implementation"; the dlerror text is glibc's elf/dl-version.c match_symbol.
OLD_LIBFABRIC = (f"{P}NCCL INFO NET/Plugin : dlerror=/opt/amazon/efa/lib/libfabric.so.1: version `FABRIC_1.7' not "
                 "found (required by /opt/aws-ofi-nccl/lib/libnccl-net.so) No plugin found (libnccl-net.so), using "
                 "internal implementation\n")
# The same line on a node that simply has no plugin: nothing is wrong with libfabric.
NO_PLUGIN = (f"{P}NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or "
             "directory No plugin found (libnccl-net.so), using internal implementation\n")


def _diagnose(tmp_path, text: str):
    path = tmp_path / "paste.txt"
    path.write_text(text)
    proc = cli("diagnose", "--evidence", str(path), "--format", "json")
    return proc.returncode, json.loads(proc.stdout), path


def test_a_plugin_refused_for_an_old_libfabric_is_decided_by_the_efa_step(tmp_path):
    rc, d, path = _diagnose(tmp_path, OLD_LIBFABRIC)
    assert rc == 1 and d["verdict"] == "fault"
    assert d["root_cause"]["id"] == "efa_ofi_misconfigured" and d["root_cause"]["confidence"] == "high"
    step = next(p for p in d["path"] if p["node"] == "nccl_log.efa")
    assert step["outcome"] == "yes"
    assert [(f["cause"], f["confidence"]) for f in d["findings"]] == [("efa_ofi_misconfigured", "high")]


def test_a_node_without_a_plugin_is_no_libfabric_failure(tmp_path):
    value = facts(tmp_path, NO_PLUGIN)["log.nccl"]
    assert value["errors"] == {} and value["plugin"] == "none"
