"""`Bootstrap: Using mlx5_0:1` (NCCL_OOB_NET_ENABLE, bootstrap.cc v2.24.3-1+) names the net plugin's
device, not a socket interface, with and without the `host:pid:tid [dev]` prefix."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence.nccl import NcclLog
from tests.evidence.helpers import diagnose_json, facts

PREFIXES = ("node-a:4242:4301 [0] ", "")  # NCCL's own prefix, and the message quoted without it


def _ranked(d: dict) -> list[tuple[str, str]]:
    return [(f["cause"], f["confidence"]) for f in d["findings"]]


# -- 1. `Bootstrap: Using mlx5_0:1`: the net plugin's device (NCCL_OOB_NET_ENABLE, bootstrap.cc v2.24.3-1+) --
@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("body, device", [("mlx5_0:1", "mlx5_0:1"), ("mlx5_0+mlx5_1:1", "mlx5_0+mlx5_1:1"),
                                          ("N/A:-1", "N/A:-1")])
def test_the_oob_net_device_is_a_device_not_a_socket_interface(prefix, body, device):
    log = NcclLog()
    assert log.feed(f"{prefix}NCCL INFO Bootstrap: Using {body}", "paste.txt:1")
    host = "node-a" if prefix else "?"
    assert log.bootstrap_net == {host: [device]} and log.bootstrap == {}
    assert log.where.keys == {"bootstrap_net": "paste.txt:1"}


@pytest.mark.parametrize("line", ["NCCL INFO Bootstrap : Using [0]ens5:172.31.0.137<0>",  # 2.4-2.12
                                  "NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",  # 2.13-2.23
                                  "NCCL INFO Bootstrap: Using eth0:fe80::1%eth0<0>"])  # 2.24+
def test_the_socket_bootstrap_line_is_still_an_interface(line):
    log = NcclLog()
    log.feed("node-a:1:2 [0] " + line, "paste.txt:1")
    assert log.bootstrap_net == {} and [i for i, _ in log.bootstrap["node-a"]] == [line.split("Using ")[1].split(":")[0]
                                                                                  .removeprefix("[0]")]


def test_the_oob_device_is_its_own_field(tmp_path):
    nccl = facts(tmp_path, "node-a:1:2 [0] NCCL INFO Bootstrap: Using mlx5_0:1\n"
                           "node-a:1:2 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>\n")["log.nccl"]
    assert nccl["bootstrap_net"] == {"node-a": ["mlx5_0:1"]} and nccl["bootstrap"] == {"node-a": ["eth0:10.0.0.1"]}


OOB_ONLY = ("node-a:4242:4301 [0] NCCL INFO NCCL version 2.27.7+cuda12.9\n"
            "node-a:4242:4301 [0] NCCL INFO NCCL_OOB_NET_ENABLE set by environment to 1\n"
            "node-a:4242:4301 [0] NCCL INFO Bootstrap: Using mlx5_0:1\n"
            "node-b:5151:5200 [0] NCCL INFO Bootstrap: Using mlx5_0:1\n"
            "node-b:5151:5200 [0] misc/socket.cc:578 NCCL WARN socketStartConnect: connect to 10.0.0.1<45763> returned "
            "Connection refused, exceeded error retry count after 35 attempts\n")


def test_two_hosts_on_the_oob_net_are_no_routed_socket_interfaces(tmp_path):
    # Read as interfaces, the two hosts' device lines made the `blocked` step decide socket_blocked (a filter
    # between routed interfaces) though no line shows a socket interface at all.
    rc, d, _ = diagnose_json(tmp_path, OOB_ONLY)
    assert rc == 3 and d["verdict"] == "inconclusive" and d["root_cause"]["confidence"] == "low"
    assert [c for c, _ in _ranked(d)] == ["wrong_socket_ifname", "container_network_isolation", "socket_blocked"]
    step = next(s for s in d["path"] if s["node"] == "nccl_log.blocked")
    assert step["outcome"] == "no" and step["value"]["log.nccl.bootstrap"] == {}


def test_an_oob_device_is_no_interface_chosen_against_nccl_socket_ifname(tmp_path):
    # NCCL_SOCKET_IFNAME names an interface; the failing host printed only its OOB device: whether it has ens9 is
    # not in the text (checks._unverified_ifname), where the device line had read as an interface it chose.
    text = ("node-a:4242:4301 [0] NCCL INFO NCCL version 2.27.7+cuda12.9\n"
            "node-a:4242:4301 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ens9\n"
            "node-a:4242:4301 [0] NCCL INFO Bootstrap: Using mlx5_0:1\n"
            "node-a:4242:4301 [0] misc/socket.cc:578 NCCL WARN socketStartConnect: connect to 10.0.0.1<45763> returned "
            "Connection refused, exceeded error retry count after 35 attempts\n")
    rc, d, _ = diagnose_json(tmp_path, text)
    assert next(s["outcome"] for s in d["path"] if s["node"] == "nccl_log.socket_iface") == "unknown"
    assert _ranked(d)[0] == ("wrong_socket_ifname", "medium") and d["findings"][0]["contradicting"] == []
