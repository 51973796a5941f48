"""NCCL's TCP step does not speak against a cause only EFA's lines show; against a TCP failure it
still does."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json


def _ranked(d: dict) -> list[tuple[str, str]]:
    return [(f["cause"], f["confidence"]) for f in d["findings"]]


# -- 7. NCCL's TCP step does not speak against a cause only EFA's lines show ------------------------------
EFA_UNREACHABLE = (
    "ip-10-0-1-5:3021:3090 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
    "ip-10-0-1-5:3021:3090 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)\n"
    "ip-10-0-1-5:3021:3090 [0] NCCL INFO Using network AWS Libfabric\n"
    "ip-10-0-1-5:3021:3090 [0] virtual void PlatformAWS::log_cq_error(void*, fid_cq*, fi_cq_err_entry*, const char*):1047 "
    "NCCL WARN NET/OFI Request 0x7f2c1c0a5e00 (send) completed with error: err: 113, flags: 0, prov_errno: 15, strerror: "
    "Unreachable remote - never received a response My EFA addr: fe80::8ff:c1ff:fe2b:4a1d My host id: "
    "i-0a1b2c3d4e5f60718 Peer EFA addr: fe80::84c:7ff:fe3e:91b3 Peer host id: i-0f1e2d3c4b5a69788, len: 0\n")


def test_an_efa_unreachable_remote_is_not_spoken_against_by_the_tcp_step(tmp_path):
    rc, d, _ = diagnose_json(tmp_path, EFA_UNREACHABLE)
    assert rc == 3 and _ranked(d)[0] == ("socket_blocked", "medium")
    assert d["findings"][0]["contradicting"] == []


def test_a_tcp_failure_is_still_spoken_against_by_the_tcp_step(tmp_path):
    # The step looks for connect_refused: a refused connect without routed interfaces shown stays weighed down.
    rc, d, path = diagnose_json(tmp_path, "node-a:1:2 [0] include/socket.h:390 NCCL WARN Connect to "
                                          "10.0.0.2<45763> failed : Connection refused\n")
    blocked = next(f for f in d["findings"] if f["cause"] == "socket_blocked")
    assert blocked["contradicting"] == [f"{path}:1: NCCL's TCP connections between routed interfaces go through -> no"]
