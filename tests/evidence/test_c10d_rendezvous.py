"""PyTorch c10d's rendezvous lines (issue 12, dev10): the TCPStore client's socket.cpp / TCPStore.cpp
messages under c10/util/Logging.cpp's prefixes (`[W socket.cpp:601] ` to 2.2, `[rank0]:[W1203
10:11:12.123456789 socket.cpp:752] ` after; the month-day is not zero-padded) are read as what they
are: the rendezvous at MASTER_ADDR:MASTER_PORT, before NCCL's bootstrap. One address's failure is a
retry c10d makes itself; its timeout is the failure. Kernel lines stay kernel lines."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_json

STAMPED = "[W1203 10:11:12.123456789 socket.cpp:752] "
PREFIXES = ("", "[W socket.cpp:601] ", STAMPED, "[rank1]:" + STAMPED, "[W203 09:01:02.000000123 socket.cpp:764] ",
            "[W ..\\torch\\csrc\\distributed\\c10d\\socket.cpp:601] ")
RETRIES = [
    "[c10d] The client socket has failed to connect to [node-1]:29500 (errno: 113 - No route to host).",
    "[c10d] The client socket has failed to connect to [node-1]:29500 (errno: 111 - Connection refused).",
    "[c10d] The client socket has failed to connect to node-1:29500 (errno: 101 - Network is unreachable).",
    "[c10d] The client socket has failed to connect to [DESKTOP-1]:29500 (system error: 10049 - The requested "
    "address is not valid in its context.).",
    "[c10d] TCP client failed to connect/validate to host node-1:29500 - retrying (try=0, timeout=1800000ms, "
    "delay=496ms): The client socket has timed out after 1800000ms while trying to connect to (node-1, 29500).",
    "[c10d] No socket on (node-1, 29500) is listening yet, will retry.",
    "[c10d] The client socket cannot be initialized to connect to [node-1]:29500 (errno: 97 - Address family not "
    "supported by protocol).",
    "The server socket on [node-1]:29500 is not yet listening (errno: 111 - Connection refused), will retry",  # 1.11
]
FAILURES = [
    "[c10d] The client socket has timed out after 1800000ms while trying to connect to (node-1, 29500).",
    "[c10d] The client socket has failed to connect to any network address of (node-1, 29500).",
    "[c10d] TCP client failed to connect/validate to host node-1:29500 - timed out (try=3, timeout=1800000ms): The "
    "client socket has timed out after 1800000ms while trying to connect to (node-1, 29500).",
    "[c10d] The client socket has failed to connect to any network address of (05, 40323).",  # 2.0 (socket.cpp:610)
]


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("message,kind", [(m, "c10d_store_retry") for m in RETRIES]
                         + [(m, "c10d_store_unreachable") for m in FAILURES])
def test_each_rendezvous_line_is_its_kind_under_each_prefix(prefix, message, kind):
    assert signatures.match(prefix + message).kind == kind


def test_the_python_side_of_the_timeout_is_the_same_failure():
    for line in ("torch.distributed.DistNetworkError: The client socket has timed out after 1800s while trying to "
                 "connect to (node-1, 29500).",
                 "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 1/2 clients joined."):
        assert signatures.match(line).kind == "c10d_store_unreachable"


def test_a_retry_is_not_a_failure_and_names_no_cause():
    assert not signatures.by_kind()["c10d_store_retry"].blocking and "c10d_store_retry" not in signatures.candidates()
    assert signatures.by_kind()["c10d_store_unreachable"].blocking
    assert [c.cause for c in signatures.candidates()["c10d_store_unreachable"]] == ["socket_blocked"]


def _segments_and_kinds(tmp_path, text: str) -> tuple[list[tuple[str, str]], dict, str]:
    """(segment kind, lines) of the paste, its log.nccl.errors, and its path."""
    rc, d, path = diagnose_json(tmp_path, text)
    segments = [(s["kind"], s["lines"]) for s in d["evidence_used"]["files"][0]["segments"]]
    return segments, next(e["observed"] for e in d["evidence"] if e["fact"] == "log.nccl.errors"), path


def test_stamped_c10d_lines_read_as_application_lines_and_dmesg_as_kernel(tmp_path):
    text = ("[  123.456789] mlx5_core 0000:17:00.0: mlx5_cmd_out_err:838:(pid 1): QUERY_VPORT_COUNTER(0x770) failed\n"
            "[Tue Dec  1 10:00:00 2026] mlx5_core 0000:17:00.0 ens1f0np0: Link down\n"
            f"[rank1]:{STAMPED}{RETRIES[0]}\n"
            f"[E1203 10:41:12.223456789 socket.cpp:1023] {FAILURES[0]}\n")
    segments, errors, path = _segments_and_kinds(tmp_path, text)
    assert segments == [("kernel_log", "1-2"), ("signature", "3-4")]
    assert sorted(errors) == ["c10d_store_retry", "c10d_store_unreachable"]
    assert errors["c10d_store_unreachable"]["source"] == f"{path}:4"


@pytest.mark.parametrize("stamp", ["2025-05-10T23:09:41Z ", "2025-05-10T23:09:41.123+00:00 ", "Dec  3 10:11:12 "])
def test_a_log_shippers_stamp_before_a_c10d_line_is_no_syslog_host(tmp_path, stamp):
    # `STAMP [W socket.cpp:601] ...` once read as syslog's `STAMP HOST PROC:` (a kernel block, its text unread)
    text = (f"{stamp}[W socket.cpp:601] {RETRIES[0]}\n"
            f"{stamp}[E1203 10:41:12.223456789 socket.cpp:1023] {FAILURES[0]}\n"
            f"{stamp}gpu01 kernel: mlx5_core 0000:17:00.0 ens1f0np0: Link down\n")
    segments, errors, _ = _segments_and_kinds(tmp_path, text)
    assert segments == [("signature", "1-2"), ("kernel_log", "3")]
    assert sorted(errors) == ["c10d_store_retry", "c10d_store_unreachable"]


def test_a_rendezvous_timeout_is_socket_blocked_at_most_medium_with_the_store_to_check(tmp_path):
    text = (f"[rank1]:{STAMPED}{RETRIES[0]}\n"
            f"[rank1]:[E1203 10:41:12.223456789 socket.cpp:1023] {FAILURES[0]}\n")
    rc, d, path = diagnose_json(tmp_path, text)
    assert rc == 3 and [(f["cause"], f["confidence"]) for f in d["findings"]] == [("socket_blocked", "medium")]
    assert d["findings"][0]["next_step"].startswith("this is PyTorch's rendezvous (the TCPStore at MASTER_ADDR:MASTER_PORT)")
    assert d["findings"][0]["supporting"] == [f"{path}:2: [rank1]:[E1203 10:41:12.223456789 socket.cpp:1023] {FAILURES[0]}"]


def test_a_lone_retry_points_at_no_cause(tmp_path):
    rc, d, _ = diagnose_json(tmp_path, f"{STAMPED}{RETRIES[0]}\n")
    assert rc == 3 and d["findings"] == []
    assert d["inconclusive"][-1]["reason"].startswith("nothing in this text points at a cause")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_a_store_on_the_loopback_that_never_answered_is_no_network_cause(tmp_path, host):
    line = f"[E728 15:01:59.561275187 socket.cpp:1028] [c10d] {FAILURES[0].replace('node-1', host)}"
    assert signatures.match(line).kind == "c10d_local_store_unreachable"
    assert "c10d_local_store_unreachable" not in signatures.candidates()
    rc, d, path = diagnose_json(tmp_path, line + "\n")
    assert rc == 3 and d["findings"] == []
    assert d["inconclusive"][-2]["reason"].startswith(f"{path}:1: PyTorch's rendezvous never reached its TCPStore on "
                                                      "this host's loopback")
