"""The facts behind the ids added beyond docs/causes.md (docs/causes-added.md) that a scenario alone does
not pin: which version lines count as a mismatch, and when failed TCP connects mean a filter."""

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


TIMEOUT = "node2:3307:3340 [0] misc/socket.cc:476 NCCL WARN socketStartConnect: exceeded timeouts (20000)\n"


def test_a_connect_timeout_between_routed_interfaces_of_two_hosts_is_a_filter(tmp_path):
    boot = ("node1:1:1 [0] NCCL INFO Bootstrap : Using bond0:10.20.0.11<0>\n"
            "node2:2:2 [0] NCCL INFO Bootstrap : Using bond0:10.20.0.12<0>\n")
    d = diagnose(tmp_path, boot + TIMEOUT)
    assert (d["root_cause"]["id"], d["root_cause"]["node"]) == ("socket_blocked", "nccl_log.socket_filtered")


def test_a_connect_timeout_whose_interfaces_are_not_shown_is_not_decided(tmp_path):
    one = "node1:1:1 [0] NCCL INFO Bootstrap : Using bond0:10.20.0.11<0>\n"
    d = diagnose(tmp_path, one + TIMEOUT)
    step = next(p for p in d["path"] if p["node"] == "nccl_log.blocked")
    assert step["outcome"] == "no" and d["verdict"] == "inconclusive"
    assert "socket_blocked" in [f["cause"] for f in d["findings"]]  # still a candidate


def test_a_container_bridge_is_decided_before_a_filter(tmp_path):
    boot = ("node1:1:1 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>\n"
            "node2:2:2 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.3<0>\n")
    assert diagnose(tmp_path, boot + TIMEOUT)["root_cause"]["id"] == "container_network_isolation"


def test_a_lone_interposer_line_is_a_low_candidate_and_a_hung_init_under_it_is_decided(tmp_path):
    hami = "[HAMI-core Msg(960:140526578577408:libvgpu.c:873)]: Initializing.....\n"
    alone = diagnose(tmp_path, hami)
    assert [(f["cause"], f["confidence"]) for f in alone["findings"]] == [("gpu_sharing_interposer_deadlock", "low")]
    hung = diagnose(tmp_path, hami + "    ncclCommInitRank (libnccl.so.2)\n")
    assert (hung["root_cause"]["id"], hung["root_cause"]["node"]) == ("gpu_sharing_interposer_deadlock",
                                                                     "nccl_log.interposer_hang")
