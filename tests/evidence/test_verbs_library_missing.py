"""A missing verbs library: on a one-host run the network transport's causes drop out, so it points
at nothing; between hosts it stays a candidate."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import ranked as _ranked

# -- a system error of a job on one host: the causes between hosts drop out -------------------------
# nccl-tests common.cu prints the ranks (`Rank N Pid P on HOST device D`) before NCCL's init.
ONE_HOST = ("# nThread 1 nGpus 4 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
            "#\n# Using devices\n"
            + "".join(f"#   Rank  {r} Pid   1688 on    box-1 device  {r} [0x18] GeForce RTX 2080 Ti\n" for r in range(4))
            + "box-1: Test NCCL failure common.cu:777 'unhandled system error'\n")


# -- a one-host run: the network transport's causes drop out -----------------------------------------
# NCCL 2.4.8 prints these init lines (bootstrap.cc, net.cc, ibvwrap.cc, net_socket.cc); nccl-tests ends a
# run with its average bus bandwidth (common.cu).
H = "h0913n:12877:12877 [0] NCCL INFO "
INIT = (f"{H}Bootstrap : Using [0]enp0s31f6:192.168.97.149<0>\n{H}NET/Plugin : No plugin found (libnccl-net.so).\n"
        "h0913n:12877:12877 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
        f"{H}NET/Socket : Using [0]enp0s31f6:192.168.97.149<0>\nNCCL version 2.4.8+cuda10.1\n")
LISTED = ONE_HOST.split("box-1: Test")[0].replace("box-1", "h0913n")
DONE = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 10.5213\n"


def test_a_missing_verbs_library_on_one_host_points_at_nothing(tmp_path):
    # Ranks of one host connect over P2P or SHM; NET only when both cannot (transport.cc).
    rc, d, _ = _diagnose(tmp_path, LISTED + INIT + DONE)
    assert rc == 3 and d["root_cause"] is None and d["healthy"] is None and _ranked(d) == []
    assert d["inconclusive"][-1]["reason"].startswith("nothing in this text points at a cause")


def test_a_missing_verbs_library_between_hosts_stays_a_candidate(tmp_path):
    _, d, _ = _diagnose(tmp_path, INIT + "gpu-b:1:1 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.2<0>\n")
    assert "container_missing_libibverbs" in _ranked(d)
