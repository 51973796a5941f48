"""Which NCCL version lines count as a version mismatch between the job's hosts (an id added beyond
docs/causes.md: docs/causes-added.md `nccl_version_mismatch`): versions are counted per host, one host
before and after an upgrade is no mismatch, and NCCL 2.23+ says the mismatch itself."""

from __future__ import annotations

from tests.evidence.helpers import facts
from tests.evidence.test_runbook import diagnose

V1, V2 = "NCCL INFO NCCL version 2.21.5+cuda12.4\n", "NCCL INFO NCCL version 2.18.1+cuda12.1\n"


def test_versions_are_counted_per_host(tmp_path):
    value = facts(tmp_path, f"node1:1:1 [0] {V1}node2:2:2 [0] {V2}node3:3:3 [0] {V1}")["log.nccl"]
    assert value["versions"] == {"2.21.5": ["node1", "node3"], "2.18.1": ["node2"]}
    assert value["version"] == "2.21.5+cuda12.4"


def test_one_host_before_and_after_an_upgrade_is_no_mismatch(tmp_path):
    # Two runs of one host pasted side by side, and lines without a host: neither says the job mixes versions.
    text = f"node1:1:1 [0] {V1}node1:9:9 [0] {V2}{V2}"
    assert facts(tmp_path, text)["log.nccl"]["versions"] == {}
    assert (diagnose(tmp_path, text)["root_cause"] or {}).get("id") != "nccl_version_mismatch"


def test_nccl_223_says_the_mismatch_itself(tmp_path):
    d = diagnose(tmp_path, "n1:1:2 [0] init.cc:1043 NCCL WARN Mismatched NCCL version detected : rank 8 version 22105 "
                           "rank 0 version 22304\n")
    assert (d["root_cause"]["id"], d["root_cause"]["node"]) == ("nccl_version_mismatch", "nccl_log.version_mismatch")
