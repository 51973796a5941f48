"""An error passed up through the bootstrap (NCCLCHECK's `FILE:LINE -> RESULT` trace) names the socket
interface first; a remote error or another file's trace is not a bootstrap failure, and a WARN
that names the failure keeps its own kind first."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import ranked as _ranked


def _errors(d: dict) -> dict:
    return next(e["observed"] for e in d["evidence"] if e["fact"] == "log.nccl.errors")


# -- an error passed up through the bootstrap (NCCLCHECK's `FILE:LINE -> RESULT` trace) --------------
# The shape NCCL 2.16-2.18 prints when the WARN before it was not pasted (misc/socket.cc under bootstrap.cc).
Q = "node-a:2330:2658 [2] NCCL INFO "
TRACE = (f"{Q}NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:192.168.0.103<0>\n"
         f"{Q}misc/socket.cc:567 -> 2\n{Q}misc/socket.cc:618 -> 2\n{Q}bootstrap.cc:270 -> 2\n")


def test_a_bootstrap_error_trace_names_the_socket_interface_first(tmp_path):
    rc, d, path = _diagnose(tmp_path, TRACE)
    assert rc == 3 and d["verdict"] == "inconclusive" and d["healthy"] is None
    assert _ranked(d)[:3] == ["wrong_socket_ifname", "socket_blocked", "container_network_isolation"]
    first = d["findings"][0]
    assert first["supporting"] == [f"{path}:4: bootstrap.cc:270 -> 2"]
    assert first["next_step"] == ("paste the `Bootstrap : Using` line of every host, the job's NCCL_SOCKET_IFNAME "
                                  "and `ip -br addr`")


def test_nccl_2_30s_trace_with_the_function_is_read(tmp_path):
    _, d, path = _diagnose(tmp_path, f"{Q}bootstrap.cc:612 (bootstrapInit) -> 3\n")
    assert d["findings"][0]["cause"] == "wrong_socket_ifname"
    assert d["findings"][0]["supporting"] == [f"{path}:1: bootstrap.cc:612 (bootstrapInit) -> 3"]


def test_a_remote_error_or_another_files_trace_is_not_a_bootstrap_failure(tmp_path):
    # 6 is ncclRemoteError (a peer closed: it follows the peer's own failure); transport/net.cc is not TCP.
    for text in (f"{Q}bootstrap.cc:270 -> 6\n", f"{Q}transport/net.cc:295 -> 2\n{Q}transport.cc:179 -> 2\n"):
        _, d, _ = _diagnose(tmp_path, text)
        assert "bootstrap_failed" not in _errors(d) and "wrong_socket_ifname" not in _ranked(d), text


def test_a_warn_that_names_the_failure_keeps_its_own_kind_first(tmp_path):
    text = (f"node-a:2330:2658 [2] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.1.0.2<45123> "
            f"failed : Connection refused\n{Q}misc/socket.cc:567 -> 2\n{Q}bootstrap.cc:270 -> 2\n")
    _, d, path = _diagnose(tmp_path, text)
    assert d["findings"][0]["cause"] == "wrong_socket_ifname"
    assert d["findings"][0]["supporting"][0].startswith(f"{path}:1: misc/socket.cc socketStartConnect")
