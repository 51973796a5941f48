"""A process killed by SIGBUS (signatures.yaml bus_error): NCCL 2.15-2.18 size their /dev/shm segments with
ftruncate only, so a tmpfs too small faults on first touch. The backtrace printed with the signal says where
the process died, not that a rank waits: its NCCL frames give no hang candidates and no hang symptom."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json

# UCX's signal handler and its backtrace (ucs/debug/debug.c shapes), a rank dying inside ncclGroupEnd.
KILLED = """\
[gpu-node-07:4123 :0:4177] Caught signal 7 (Bus error: nonexistent physical address)
==== backtrace (tid:   4177) ====
 0 0x0000000000012980 __funlockfile()  ???:0
 1 0x000000000007a3c1 ncclGroupEnd()  ???:0
 2 0x0000000000008609 start_thread()  ???:0
=================================
"""
# The same frame in a py-spy dump of a live rank: a hang.
WAITING = """\
Thread 4177 (idle): "MainThread"
    ncclGroupEnd (libnccl.so.2)
    all_reduce (torch/distributed/distributed_c10d.py:2050)
"""


def test_a_sigbus_in_nccl_points_at_dev_shm_alone(tmp_path):
    rc, data, path = diagnose_json(tmp_path, KILLED)
    assert rc == 3 and data["verdict"] == "inconclusive"
    assert [(f["cause"], f["confidence"]) for f in data["findings"]] == [("container_shm_too_small", "medium")]
    assert data["findings"][0]["supporting"] == [
        f"{path}:1: [gpu-node-07:4123 :0:4177] Caught signal 7 (Bus error: nonexistent physical address)"]
    assert data["findings"][0]["next_step"].startswith("paste `df -h /dev/shm` where the job runs")


def test_the_same_frame_without_a_signal_is_still_a_hang(tmp_path):
    _, data, _ = diagnose_json(tmp_path, WAITING)
    causes = [f["cause"] for f in data["findings"]]
    assert "container_shm_too_small" not in causes and causes  # the frame keeps its hang candidates
