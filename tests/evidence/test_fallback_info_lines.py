"""Failure and fallback INFO lines are read as notes of their kind (NCCL goes on after each), in the
shape each tag prints them; healthy init chatter with the same words is not read; the fast path
reads them as the line path does."""

from __future__ import annotations

from pathlib import Path

import pytest

from allreduce_doctor.evidence.nccl import NcclLog
from tests.evidence.helpers import ROOT, diagnose_json
from tests.evidence.test_fast_path_property import _read

PREFIXES = ("node-a:4242:4301 [0] ", "")  # NCCL's own prefix, and the message quoted without it


def _errors(d: dict) -> dict:
    return next(e["observed"] for e in d["evidence"] if e["fact"] == "log.nccl.errors") or {}


def _ranked(d: dict) -> list[tuple[str, str]]:
    return [(f["cause"], f["confidence"]) for f in d["findings"]]


# -- 5. failure and fallback INFO lines: read as notes (NCCL goes on after each) --------------------------
FALLBACKS = [
    ("NCCL INFO NET/Plugin: Failed to find ncclNetPlugin symbol (>= v5). ncclNetPlugin symbols v4 and lower are not "
     "supported.", "plugin_unusable", ["net_plugin_not_loaded"]),  # net.cc v2.21.5-1
    ("NCCL INFO External network plugin libnccl-net.so is unsupported", "plugin_unusable",
     ["net_plugin_not_loaded"]),  # plugin/net.cc v2.30.7-1
    ("NCCL INFO Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1610612736 : CUDA error 802 'system not "
     "yet initialized'. Proceeding without NVLS support.", "nvls_fallback",
     ["fabric_manager_not_ready", "nvlink_degraded"]),  # nvls.cc v2.27.7-1
    ("NCCL INFO cuMem host allocations do not appear to be working; falling back to a /dev/shm/ based implementation. "
     "This could be due to the container runtime disabling NUMA support. To disable this warning, set "
     "NCCL_CUMEM_HOST_ENABLE=0", "cumem_host_fallback", []),  # misc/cudawrap.cc v2.27.7-1
    ("NCCL INFO Could not enable P2P between dev 0(=1a000) and dev 1(=1b000)", "p2p_unavailable", []),  # p2p.cc
    ("NCCL INFO P2P not supported between GPU0 and GPU3", "p2p_unavailable", []),  # allocator.cc v2.27.7-1
    ("NCCL INFO Call to ibv_query_ece skipped, internal_name doesn't exist", "ece_verbs_missing",
     ["rdma_core_outdated"]),  # misc/ibvwrap.cc v2.19.3-1+
    ("NCCL INFO Unable to use GIN: Peermem is not supported, nor DMA-BUF.", "gin_no_gdr", ["gdr_disabled"]),
    ("NCCL INFO Unable to recognize NCCL_NETDEVS_POLICY=max:2, using NCCL_NETDEVS_POLICY_AUTO instead.",
     "env_value_ignored", []),  # graph/topo.cc v2.30.7-1
    ("NCCL INFO Failed to open libmlx5.so[.1]", "mlx5dv_missing", []),  # misc/mlx5dvsymbols.cc v2.27.7-1
    ("NCCL INFO NET/IB: ncclIbResiliencyHandleCompletionError: Marking device 1 as permanently failed (send "
     "comm=0x7f3a2c01d2b0)", "ib_device_failover", ["ib_port_down"]),  # net_ib/p2p_resiliency.cc v2.30.7-1
    ("NCCL INFO NET/IB : There are mismatched physical devices between local (0,1) and remote (0,2). To disable this "
     "warning, set NCCL_IB_WARN_RAIL_LOCAL=0", "ib_rail_mismatch", []),  # net_ib.cc v2.27.7-1
    ("NCCL INFO Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, curr state INIT, next "
     "state RTR, local GID index 3, local GID ::ffff:10.0.0.1, remote GID ::ffff:10.0.1.1, retrying 1/34 after 100 "
     "msec of sleep", "qp_modify_retry", []),  # misc/ibvwrap.cc v2.24.3-1+
]


def test_the_modify_qp_warn_after_the_retries_is_still_a_qp_timeout():
    log = NcclLog()
    log.feed("node-a:1:2 [0] misc/ibvwrap.cc:301 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, "
             "on dev mlx5_0:1, curr state INIT, next state RTR, local GID index 3, local GID ::ffff:10.0.0.1, remote "
             "GID ::ffff:10.0.1.1", "paste.txt:1")
    assert list(log.errors) == ["qp_timeout"] and log.errors["qp_timeout"]["details"][0]["gid_index"] == 3


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("line, kind, causes", FALLBACKS, ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(FALLBACKS)])
def test_a_fallback_info_line_is_a_note_of_its_kind(prefix, line, kind, causes):
    log = NcclLog()
    assert log.feed(prefix + line, "paste.txt:1")
    entry = log.errors[kind]
    assert list(log.errors) == [kind] and entry["blocking"] is False and entry["causes"] == causes
    assert entry["hosts"] == (["node-a"] if prefix else [])


def test_healthy_init_chatter_with_the_same_words_is_not_read():
    # Every rank of a healthy 2.27+ job prints the first; the rest are NCCL's own notes that name no cause.
    log = NcclLog()
    for line in ("NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
                 "NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v8 symbol.",
                 "NCCL INFO Could not find a path for pattern 1, falling back to simple order",
                 "NCCL INFO Call to ibv_query_ece not supported"):
        log.feed("node-a:1:2 [0] " + line, "paste.txt:1")
    assert log.errors == {}


def test_an_nvls_fallback_is_a_slow_job_s_fabric_manager_candidate(tmp_path):
    text = ("node-a:4242:4301 [0] NCCL INFO NCCL version 2.27.7+cuda12.9\n"
            f"node-a:4242:4301 [0] {FALLBACKS[2][0]}\n"
            "node-a:4242:4301 [0] NCCL INFO Using network IB\n")
    rc, d, path = diagnose_json(tmp_path, text, "--symptom", "slow")
    assert rc == 1 and d["verdict"] == "fault" and _errors(d)["nvls_fallback"]["blocking"] is False
    # dev10: the runbook's NVLS step reads the fallback as the bind failure it is (test_nvls_lines.py).
    assert _ranked(d) == [("fabric_manager_not_ready", "high"), ("nvlink_degraded", "low")]
    assert d["findings"][1]["supporting"] == [f"{path}:2: {FALLBACKS[2][0].removeprefix('NCCL INFO ')}"]


def test_the_nvls_bind_warn_is_still_a_failure():
    line = ("transport/nvls.cc:284 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1610612736 : "
            "CUDA error 802 'system not yet initialized'.")
    log = NcclLog()
    log.feed("node-a:1:2 [0] " + line, "paste.txt:1")
    assert list(log.errors) == ["nvls_failure"] and log.errors["nvls_failure"]["blocking"] is True


def test_an_unusable_plugin_is_a_plugin_not_loaded_candidate(tmp_path):
    text = ("node-a:4242:4301 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
            f"node-a:4242:4301 [0] {FALLBACKS[0][0]}\n"
            "node-a:4242:4301 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n")
    rc, d, _ = diagnose_json(tmp_path, text, "--symptom", "slow")
    assert "net_plugin_not_loaded" in [c for c, _ in _ranked(d)]


def test_the_fast_path_reads_each_fallback_line_as_the_line_path(tmp_path):
    lines = [f"node-{n % 3}:1:2 [0] {line}" for n, (line, _, _) in enumerate(FALLBACKS * 2)]
    path = tmp_path / "mix.log"
    path.write_text("\n".join(lines) + "\n")
    fast, line = _read(path, bulk=True), _read(path, bulk=False)
    assert line["errors"]["p2p_unavailable"]["count"] == 4
    assert fast == line == _read(path, bulk=True, find_keys_max=0)  # failure keys found one by one, or by one scan


@pytest.mark.skipif(not (Path("/work/.mirror/NVIDIA+nccl/repo") / "HEAD").exists(), reason="no NVIDIA/nccl mirror")
def test_the_core_fallback_infos_of_the_newest_tags_are_read():
    import importlib.util

    spec = importlib.util.spec_from_file_location("signature_coverage", ROOT / "benchmarks" / "signature_coverage.py")
    coverage = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(coverage)
    floors = {"v2.27.7-1": 15, "v2.30.7-1": 20}  # dev8: 4/61 and 3/120 before, of the same formats
    for tag, floor in floors.items():
        totals = coverage.totals(coverage.coverage(coverage.MIRROR, tag))
        assert totals["core_read"] >= floor and totals["core_info"] >= 60, (tag, totals)
