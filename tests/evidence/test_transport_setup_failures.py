"""Failures while NCCL sets its transport up: a connect that ran out of retries is a refused connect,
the IB transport finding no IP interface, ENOMEM creating a queue (the memlock limit), and NICs
of two link layers (the HCA selection)."""

from __future__ import annotations

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_rc_json as _diagnose
from tests.evidence.helpers import facts
from tests.evidence.helpers import ranked as _ranked

P = "node-a:4242:4301 [3] "


# -- a refused connect that NCCL 2.16-2.23 reports only as `exceeded retries` ----------------------------
def test_exceeded_retries_of_a_connect_is_a_refused_connect(tmp_path):
    errors = facts(tmp_path, f"{P}misc/socket.cc:516 NCCL WARN socketPollConnect: exceeded retries (20)\n")
    assert list(errors["log.nccl"]["errors"]) == ["connect_refused"]
    assert signatures.match("misc/socket.cc:525 NCCL WARN socketPollConnect: exceeded timeouts (20)").kind == \
        "connect_timeout"


def test_the_ib_transport_finding_no_ip_interface_is_the_no_interface_signature():
    assert signatures.match("transport/net_ib.cc:636 NCCL WARN NET/IB : No IP interface found.").kind == \
        "no_socket_iface"


# -- ENOMEM creating a CQ or QP: the memlock limit, as for a registration -----------------------------
# mlx5 create_cq_user / _create_user_qp pin the queue's buffer through ib_umem_get, which refuses past
# RLIMIT_MEMLOCK without CAP_IPC_LOCK (drivers/infiniband/core/umem.c); NCCL 2.21+ prints strerror(errno).
def test_enomem_creating_a_queue_is_the_memlock_limit_not_a_qp_setup_failure(tmp_path):
    for call in ("ibv_create_cq", "ibv_create_qp"):
        text = f"{P}misc/ibvwrap.cc:190 NCCL WARN Call to {call} failed with error Cannot allocate memory\n"
        assert list(facts(tmp_path, text)["log.nccl"]["errors"]) == ["mr_memlock"], call
    assert signatures.match("mlx5_0: ibv_create_cq() failed: Cannot allocate memory. Please set max locked "
                            "memory (ulimit -l) to 'unlimited' (current: 64 kbytes)").kind == "mr_memlock"
    assert signatures.match("misc/ibvwrap.cc:202 NCCL WARN Call to ibv_create_qp failed with error Invalid "
                            "argument").kind == "qp_failed"


def test_nics_of_two_link_layers_name_the_hca_selection(tmp_path):
    # net_ib.cc (v2.27.7-1) / net_ib/connect.cc (v2.30.7-1): "Try selecting NICs of only one link type using NCCL_IB_HCA".
    text = (f"{P}transport/net_ib.cc:1423 NCCL WARN NET/IB : Attempted to connect incompatible devices: "
            "[1]mlx5_1:1/RoCE and [0]mlx5_0:1/IB. Try selecting NICs of only one link type using NCCL_IB_HCA\n")
    _, d = _diagnose(tmp_path, text)
    assert _ranked(d) == ["wrong_ib_hca"] and d["findings"][0]["confidence"] == "medium"
