"""An HTTP client's connection error is no NCCL peer; NCCL's own connect failures keep their kind, and
c10d's rendezvous socket errors are the rendezvous retrying."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import signatures

# -- an HTTP client's connection error is no NCCL peer -----------------------------------------------
HTTP_ERRORS = [
    # urllib3 / requests (a vLLM or Ray client, a model download), Python's own exceptions
    "requests.exceptions.ConnectionError: HTTPConnectionPool(host='localhost', port=8000): Max retries exceeded with "
    "url: /v1/models (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f3a2c1d0>: "
    "Failed to establish a new connection: [Errno 111] Connection refused'))",
    "ConnectionRefusedError: [Errno 111] Connection refused",
    "urllib.error.URLError: <urlopen error [Errno 111] Connection refused>",
    "requests.exceptions.ConnectTimeout: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded "
    "with url: /api/models (Caused by ConnectTimeoutError(<urllib3.connection.HTTPSConnection object at 0x7f>, "
    "'Connection to huggingface.co timed out. (connect timeout=10)'))",
    "TimeoutError: [Errno 110] Connection timed out",
]


@pytest.mark.parametrize("line", HTTP_ERRORS)
def test_an_http_clients_connection_error_is_no_nccl_connect_failure(line):
    sig = signatures.match(line)
    assert sig is None or sig.kind not in ("connect_refused", "connect_timeout"), sig.kind


@pytest.mark.parametrize("line, kind", [
    ("misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : Connection refused", "connect_refused"),
    ("NCCL INFO Call to connect returned Connection refused, retrying", "connect_retry"),  # a retry, not yet a failure
    ("misc/socket.cc:578 NCCL WARN socketStartConnect: connect to 10.0.0.2<45763> returned Connection refused, "
     "exceeded error retry count after 35 attempts", "connect_refused"),
    ("misc/socket.cc:538 NCCL WARN Net : Call to recv from 10.0.0.2<45678> failed : Connection timed out", "connect_timeout"),
])
def test_nccls_own_connect_failures_keep_their_kind(line, kind):
    assert signatures.match(line).kind == kind


def test_c10d_rendezvous_socket_errors_are_the_rendezvous_retrying():
    # PyTorch torch/csrc/distributed/c10d/socket.cpp (the TCPStore client): one address's errno, which c10d retries
    # (dev10: the rendezvous, not NCCL's sockets; test_c10d_rendezvous.py)
    line = ("[W1218 20:27:21.426415540 socket.cpp:752] [c10d] The client socket has failed to connect to "
            "[node-1]:29500 (errno: 111 - Connection refused).")
    assert signatures.match(line).kind == "c10d_store_retry"
    assert signatures.match(line.replace("111 - Connection refused", "110 - Connection timed out")).kind == "c10d_store_retry"
