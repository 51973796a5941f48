"""NCCL's socket failures: a reset connection is a peer that left (only in NCCL's socket message),
and refused connects that ran out of retries are refused connects."""

from __future__ import annotations

from tests.evidence.helpers import facts

P = "gpu-a:4242:4301 [0] "


def test_a_reset_connection_is_a_peer_that_left(tmp_path):
    text = f"{P}misc/socket.cc:538 NCCL WARN Net : Call to recv from 10.0.0.2<45678> failed : Connection reset by peer\n"
    assert list(facts(tmp_path, text)["log.nccl"]["errors"]) == ["remote_error"]


def test_refused_connects_that_ran_out_of_retries_are_refused_connects(tmp_path):
    # misc/socket.cc 2.18-2.21 retries ECONNREFUSED only, then prints this without the errno text.
    text = f"{P}misc/socket.cc:466 NCCL WARN socketStartConnect: exceeded retries (20000)\n"
    assert list(facts(tmp_path, text)["log.nccl"]["errors"]) == ["connect_refused"]


def test_a_reset_connection_outside_nccls_socket_message_is_no_signal(tmp_path):
    import pytest

    from allreduce_doctor.evidence import EvidenceError

    text = ("requests.exceptions.ConnectionError: ('Connection aborted.', ConnectionResetError(104, "
            "'Connection reset by peer'))\nBrokenPipeError: [Errno 32] Broken pipe\n")
    with pytest.raises(EvidenceError):
        facts(tmp_path, text)
