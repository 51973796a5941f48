"""When failed TCP connects mean a filter (`socket_blocked`, docs/causes-added.md): a connect timeout
between routed interfaces of two hosts is decided, one whose interfaces are not shown stays a
candidate, and a container bridge is decided before a filter."""

from __future__ import annotations

from tests.evidence.test_runbook import diagnose

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
