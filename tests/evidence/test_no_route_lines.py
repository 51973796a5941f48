"""no_route only in NCCL's, the socket layer's or c10d's wording: an HTTP client's no-route is no NCCL
peer, NCCL's is read in each version's shape, c10d's is the rendezvous."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import signatures
from allreduce_doctor.evidence.nccl import NcclLog
from tests.evidence.helpers import diagnose_json

PREFIXES = ("node-a:4242:4301 [0] ", "")  # NCCL's own prefix, and the message quoted without it


def _errors(d: dict) -> dict:
    return next(e["observed"] for e in d["evidence"] if e["fact"] == "log.nccl.errors") or {}


# -- 2. no_route: NCCL's, the socket layer's or c10d's wording only --------------------------------------
NOT_NCCL = [
    "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded "
    "with url: /api/models (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f3a2c1d0>: "
    "Failed to establish a new connection: [Errno 113] No route to host'))",
    "urllib3.exceptions.NewConnectionError: <urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a "
    "new connection: [Errno 101] Network is unreachable",
    "OSError: [Errno 113] No route to host",
    "curl: (7) Failed to connect to 10.0.0.2 port 8000 after 3 ms: No route to host",
    "ssh: connect to host node-2 port 22: No route to host",
    "the nodes say No route to host when we ping them",
]


@pytest.mark.parametrize("line", NOT_NCCL)
def test_an_http_clients_no_route_is_no_nccl_peer(line):
    sig = signatures.match(line)
    assert sig is None or sig.kind != "no_route", sig.kind


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("message", [
    "include/socket.h:390 NCCL WARN Connect to 10.0.0.2<45763> failed : No route to host",  # 2.4-2.11
    "misc/socket.cc:450 NCCL WARN Net : Connect to 10.0.0.2<45763> failed : No route to host",  # 2.12
    "misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : No route to host",  # 2.18-2.23
    "misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.2<45763> returned 113(No route to host) errno "
    "115(Operation now in progress)",  # 2.21
    "misc/socket.cc:578 NCCL WARN socketStartConnect: connect to 10.0.0.2<45763> returned No route to host, exceeded "
    "error retry count after 35 attempts",  # 2.27
    "os/linux.cc:301 (socketConnectCheck) NCCL WARN ncclOsSocketStartConnect: connect to 10.0.0.2<45763> failed : "
    "Network is unreachable",  # 2.30
    "misc/socket.cc:30 NCCL WARN socketProgressOpt: Call to recv from 10.0.0.2<45763> failed : No route to host",
])
def test_nccls_no_route_is_read_in_each_versions_shape(prefix, message):
    log = NcclLog()
    assert log.feed(prefix + message, "paste.txt:1")
    assert list(log.errors) == ["no_route"] and log.errors["no_route"]["details"][0]["address"] == "10.0.0.2"


@pytest.mark.parametrize("line", [
    "[W socket.cpp:601] [c10d] The client socket has failed to connect to [node-2]:29500 (errno: 113 - No route to host).",
    "[W socket.cpp:601] [c10d] The client socket has failed to connect to node-2:29500 (errno: 101 - Network is unreachable).",
])
def test_c10ds_socket_wording_is_the_rendezvous_not_no_route(line):
    assert signatures.match(line).kind == "c10d_store_retry"  # dev10: c10d's TCPStore client retries it


def test_a_download_that_found_no_route_is_no_bootstrap_failure(tmp_path):
    text = ("node-a:4242:4301 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n" + NOT_NCCL[0] + "\n")
    rc, d, _ = diagnose_json(tmp_path, text)
    assert rc == 3 and _errors(d) == {} and d["findings"] == []
