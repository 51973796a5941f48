"""Fleet (issue 28, item 2): a node whose busbw is below both its peers and its own ceiling is named, with its
ceiling in GB/s; a node below its peers yet at its own hardware's limit (other GPUs) is no straggler.

Each host's part is one node's nccl-tests table (tests/fixtures/ceiling): 8x H100 SXM at 468 GB/s (NVLS, about
480 GB/s: NVIDIA/nccl-tests#212), the same node at 120 GB/s, and a real 8x A100 SXM4 table at 232.44 GB/s
(NVLink 3 through NVSwitch: 12 x 20 = 240 GB/s in NCCL's model)."""

from __future__ import annotations

from allreduce_doctor.fleet.compare import outliers
from tests.evidence.helpers import ROOT, diagnose_json, fixture_body

D = ROOT / "tests" / "fixtures" / "ceiling"
AT = fixture_body(D / "nccl-tests-all_reduce_perf-8gpu-h100-sxm-at-nvls-limit.txt")
QUARTER = fixture_body(D / "nccl-tests-all_reduce_perf-8gpu-h100-sxm-quarter-of-nvlink.txt")
A100 = fixture_body(D / "nccl-tests-all_reduce_perf-8gpu-a100-nvlink.txt")


def paste(*hosts: tuple[str, str, str]) -> str:
    return "".join(f"root@{h}:~# ./build/all_reduce_perf -b 1M -e 8G -f 2 -g 1\n" + text.replace(old, h)
                   for h, text, old in hosts)


H100 = "jo-dau5moatnhdynmy6-worker-0"


def test_a_node_below_its_peers_and_its_ceiling_is_named_with_its_ceiling(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, paste(("gpu01", AT, H100), ("gpu02", AT, H100), ("gpu03", QUARTER, H100)))
    assert d["root_cause"]["id"] == "straggler_node"
    step = next(s for s in d["path"] if s["node"] == "fleet.outliers")
    assert step["value"] == {"gpu03": ["measured all-reduce busbw (GB/s) 120 (fleet median 468, below its ceiling "
                                       "of about 480 GB/s (NVLink (NVLS)))"]}


def test_a_node_at_its_own_hardwares_limit_is_no_straggler(tmp_path):
    _rc, d, _ = diagnose_json(tmp_path, paste(("gpu01", AT, H100), ("gpu02", AT, H100), ("gpu03", A100, "thanos")))
    assert (d["root_cause"] or {}).get("id") != "straggler_node"
    step = next(s for s in d["path"] if s["node"] == "fleet.outliers")
    assert step["outcome"] == "no"


def test_the_ceiling_decides_only_the_busbw_metric():
    ceiling = {"hardware": "at_limit", "ceiling_gbs": 240.0, "limit": "NVLink"}
    records = {n: {"settings": {"fabric": "ib"}, "numbers": {"busbw_gbs": v, "link_rate_gbps": r}, "ceiling": ceiling}
               for n, v, r in (("a", 468.0, 400.0), ("b", 468.0, 400.0), ("c", 232.0, 200.0))}
    assert [(o["node"], o["metric"]) for o in outliers(records)] == [("c", "link_rate_gbps")]
    records["c"]["ceiling"] = ceiling | {"hardware": "below"}
    assert [(o["node"], o["metric"]) for o in outliers(records)] == [("c", "link_rate_gbps"), ("c", "busbw_gbs")]
