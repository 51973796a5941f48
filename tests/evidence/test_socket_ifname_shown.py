"""Rules from the dev half's misses (issue 12, devfix), each from a primary source. Through the CLI
(diagnose --evidence FILE --format json), as an engineer pastes them."""

from __future__ import annotations

import json

from tests.evidence.helpers import cli

P = "trainer-3:1958:1958 [3] "
# NCCL 2.27.7 misc/socket.cc ncclFindInterfaces: INFO(NCCL_ENV, ...) then INFO(NCCL_NET, ...).
IFNAME = (f"{P}NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth2\n"
          f"{P}NCCL INFO NCCL_SOCKET_IFNAME set to eth2\n")
# misc/socket.cc ncclSocketInit (2.18-2.30) WARNs this and returns ncclInternalError.
FAMILY = (f"{P}misc/socket.cc:815 NCCL WARN ncclSocketInit: connecting to address  with family 59936 is "
          "neither AF_INET(2) nor AF_INET6(10)\n"
          "ncclInternalError: Internal check failed.\n")
BOOTSTRAP = f"{P}NCCL INFO Bootstrap : Using eth2:10.0.130.10<0>\n"


def _diagnose(tmp_path, text: str):
    path = tmp_path / "paste.txt"
    path.write_text(text)
    proc = cli("diagnose", "--evidence", str(path), "--format", "json")
    return proc.returncode, json.loads(proc.stdout), path


def _iface_step(d: dict) -> dict:
    return next(p for p in d["path"] if p["node"] == "nccl_log.socket_iface")


def test_a_named_interface_never_shown_in_use_beside_a_socket_failure_is_open(tmp_path):
    # With NCCL_SOCKET_IFNAME naming interfaces the search finds or fails; the default falls back
    # to docker*, then lo, and always finds one (misc/socket.cc ncclFindInterfaces, 2.4.8-2.30.7).
    rc, d, path = _diagnose(tmp_path, IFNAME + FAMILY)
    assert rc == 3 and d["verdict"] == "inconclusive"
    step = _iface_step(d)
    assert step["outcome"] == "unknown" and step["value"]["log.job.bad_socket_ifaces"] is None
    assert [(f["cause"], f["confidence"]) for f in d["findings"]] == \
        [("wrong_socket_ifname", "medium"), ("nccl_version_mismatch", "low")]
    assert d["findings"][0]["supporting"][-1] == \
        f"{path}:1-3: NCCL's bootstrap interface is one the peers can reach -> unknown"
    assert d["findings"][0]["contradicting"] == []


def test_the_same_failure_without_the_variable_keeps_the_version_first(tmp_path):
    _, d, _ = _diagnose(tmp_path, FAMILY)
    assert _iface_step(d)["outcome"] == "no"
    assert [f["cause"] for f in d["findings"]] == ["nccl_version_mismatch", "wrong_socket_ifname"]


def test_the_interface_nccl_printed_it_bootstraps_on_decides_the_step(tmp_path):
    # bootstrap.cc prints `Bootstrap : Using IF:ADDR` once the search found the named interface.
    _, d, _ = _diagnose(tmp_path, IFNAME + BOOTSTRAP + FAMILY)
    assert _iface_step(d)["outcome"] == "no"
    assert d["findings"][0]["cause"] == "nccl_version_mismatch"


def test_a_failing_host_that_printed_no_interface_stays_open_beside_one_that_did(tmp_path):
    other = "trainer-0:2001:2001 [0] NCCL INFO Bootstrap : Using eth2:10.0.130.11<0>\n"
    _, d, _ = _diagnose(tmp_path, IFNAME + other + FAMILY)
    assert _iface_step(d)["outcome"] == "unknown"
    assert d["findings"][0]["cause"] == "wrong_socket_ifname"


def test_a_loopback_interface_shown_decides_the_step_over_an_unverified_one(tmp_path):
    other = "trainer-0:2001:2001 [0] NCCL INFO Bootstrap : Using lo:127.0.0.1<0>\n"
    _, d, _ = _diagnose(tmp_path, IFNAME + other + FAMILY)
    step = _iface_step(d)
    assert step["outcome"] == "yes"
    assert step["value"]["log.job.bad_socket_ifaces"] == [
        {"host": "trainer-0", "used_for": "bootstrap", "iface": "lo", "address": "127.0.0.1"}]


def test_an_exclusion_list_leaves_every_other_interface_so_it_stays_decided(tmp_path):
    text = f"{P}NCCL INFO NCCL_SOCKET_IFNAME set by environment to ^docker,lo\n" + FAMILY
    _, d, _ = _diagnose(tmp_path, text)
    assert _iface_step(d)["outcome"] == "no"
    assert d["findings"][0]["cause"] == "nccl_version_mismatch"


def test_the_variable_alone_without_a_failure_points_at_nothing(tmp_path):
    rc, d, _ = _diagnose(tmp_path, IFNAME)
    assert rc == 3 and _iface_step(d)["outcome"] == "no"
    assert d["root_cause"] is None and d["findings"] == []
