"""Rules from the dev misses of issue 12 (dev4a: IB/RoCE/GID, NVLink, no fault) and the NCCL wording
they led to, read at several tags: each from a primary source, through `diagnose --evidence FILE
--format json` in process (the CLI's main)."""

from __future__ import annotations

import contextlib
import io
import json

from allreduce_doctor.cli import main
from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import facts

P = "node-a:4242:4301 [3] "


def _diagnose(tmp_path, text: str) -> tuple[int, dict]:
    path = tmp_path / "paste.txt"
    path.write_text(text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["diagnose", "--evidence", str(path), "--format", "json"])
    return rc, json.loads(out.getvalue())


def _ranked(d: dict) -> list[str]:
    return [f["cause"] for f in d["findings"]]


# -- NCCL 2.29+ completions: `Got CQE with error`, then the status by name ---------------------------
# transport/net_ib/p2p.cc (v2.29.7-1, v2.30.7-1): ncclIbTest warns `Got CQE with error (...)` and
# ncclIbLogCompletionWithError prints `status=IBV_WC_RETRY_EXC_ERR(12) ... vendor_err=N`.
CQE_230 = (f"{P}NCCL INFO NCCL version 2.30.7+cuda12.9\n"
           f"{P}transport/net_ib/p2p.cc:854 NCCL WARN NET/IB: Got CQE with error (devIndex=0, req=0x7f2a4c0, "
           "comm=0x7f2a3e0 (send), wr_id=140123, qp_num=4711)\n"
           f"{P}transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<45123> with "
           "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RDMA_WRITE(1) vendor_err=129  localGid ::ffff:10.0.0.1 "
           "remoteGids::ffff:10.0.0.2 hca mlx5_0\n")


def test_a_2_30_retry_exceeded_completion_is_read_as_one_and_not_as_cuda_p2p(tmp_path):
    errors = facts(tmp_path, CQE_230)["log.nccl"]["errors"]
    assert sorted(errors) == ["completion_error", "retry_exceeded"]  # the file name p2p.cc is not CUDA P2P
    assert errors["retry_exceeded"]["details"] == [{"peer": "10.0.0.2", "local_gid": "::ffff:10.0.0.1",
                                                    "remote_gid": "::ffff:10.0.0.2", "vendor_err": 129}]
    _, d = _diagnose(tmp_path, CQE_230)
    assert _ranked(d) == ["wrong_gid_index", "fabric_unreachable", "mtu_mismatch"]


def test_a_2_30_resiliency_line_of_the_ib_transport_is_not_cuda_p2p():
    line = ("transport/net_ib/p2p_resiliency.cc:312 NCCL WARN NET/IB: Could not find a replacement QP for the "
            "failed QP with qpIndex=1 (devIndex=0)")
    assert signatures.match(line).kind == "ib_device_failed"  # the 2.30 resiliency row (dev6), not cuda_p2p
    assert signatures.match("transport/p2p.cc:221 NCCL WARN P2P IPC handle open failed : invalid argument").kind \
        == "cuda_p2p"


def test_rnr_retry_exceeded_is_not_the_transport_retry_exceeded():
    # rdma-core ibv_wc_status_str: 12 "transport retry counter exceeded", 13 "RNR retry counter exceeded".
    assert signatures.match("ib_write_bw: transport retry counter exceeded").kind == "retry_exceeded"
    assert signatures.match("completion status: RNR retry counter exceeded") is None
    assert signatures.match("NET/IB: Got completion from peer 10.0.0.2<1> with status=IBV_WC_RNR_RETRY_EXC_ERR(13) "
                            "opcode=IBV_WC_SEND(0) vendor_err=136  hca mlx5_0").kind == "completion_error"


# -- the GID table changed: three wordings across NCCL versions --------------------------------------
# ncclIbAsyncThreadMain: `Got async event : GID table change` to 2.22; 2.23-2.28.3 have no case for
# IBV_EVENT_GID_CHANGE (18) and print `unknown event type (18)`; 2.28.9+ `GID table changed`.
def test_a_gid_table_change_in_each_wording_names_gid_drift(tmp_path):
    for message in ("NET/IB : mlx5_0:1 unknown event type (18)", "NET/IB : mlx5_0:1 GID table changed"):
        _, d = _diagnose(tmp_path, f"{P}transport/net_ib.cc:204 NCCL WARN {message}\n")
        assert _ranked(d) == ["gid_index_drift"], message
    assert signatures.match("NET/IB : mlx5_0:1 unknown event type (19)").kind == "ib_async_event"  # IBV_EVENT_WQ_FATAL


def test_a_non_fatal_port_error_of_2_23_and_2_30_is_a_port_event():
    for message in ("NET/IB : mlx5_0:1 Got async error event: port error",
                    "NET/IB : mlx5_0:1 Got non-fatal async event: port error(10)"):
        assert signatures.match(message).kind == "port_event", message


def test_a_fatal_qp_event_is_recognized_and_names_no_cause_it_cannot_support(tmp_path):
    text = (f"{P}transport/net_ib.cc:180 NCCL WARN NET/IB : mlx5_2:1 async fatal event on QP (0x7f3a2c01d2b0): "
            "local work queue catastrophic error\n")
    rc, d = _diagnose(tmp_path, text)
    assert rc == 3 and d["findings"] == [] and d["verdict"] == "inconclusive"
    assert any("moved a QP to error on its own" in i["reason"] for i in d["inconclusive"])


# -- ENODEV from ibv_modify_qp with NCCL_IB_GID_INDEX pinned ------------------------------------------
# Linux drivers/infiniband/core/cache.c: the QP's source GID entry with no usable net device is
# -ENODEV; the entry is the pinned index (net_ib ncclIbRtrQp, ah_attr.grh.sgid_index).
ENODEV = f"{P}misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error No such device\n"


def test_enodev_with_a_pinned_gid_index_decides_the_index(tmp_path):
    rc, d = _diagnose(tmp_path, f"{P}NCCL INFO NCCL_IB_GID_INDEX set by environment to 5.\n" + ENODEV)
    assert rc == 1 and d["root_cause"]["id"] == "wrong_gid_index" and d["root_cause"]["confidence"] == "high"
    assert {p["node"]: p["outcome"] for p in d["path"]}["nccl_log.gid"] == "yes"


def test_enodev_without_a_pinned_index_keeps_the_container_first(tmp_path):
    # NCCL chose the GID itself: in a macvlan container the entry it took is the host's (NVIDIA/nccl#925).
    _, d = _diagnose(tmp_path, ENODEV)
    assert _ranked(d) == ["container_network_isolation", "wrong_gid_index", "wrong_ib_hca"]
    assert d["verdict"] == "inconclusive"


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


# -- the GID entry NCCL reads is empty in this pod (2.23+ ncclIbRoceGetVersionNum) ----------------------
def test_an_unreadable_gid_type_names_the_index_then_the_pod_network(tmp_path):
    text = f"{P}transport/net_ib.cc:359 NCCL WARN NET/IB: read failed in ncclIbRoceGetVersionNum: Invalid argument\n"
    _, d = _diagnose(tmp_path, text)
    assert _ranked(d) == ["wrong_gid_index", "container_network_isolation"]
    assert d["findings"][0]["next_step"] == "paste `show_gids` inside each pod or container and the job's NCCL_IB_GID_INDEX"


# -- CUDA's uncorrectable NVLink and ECC errors name the hardware, not Fabric Manager --------------------
# cuda.h CUDA_ERROR_NVLINK_UNCORRECTABLE (220) and CUDA_ERROR_ECC_UNCORRECTABLE (214), as
# cuGetErrorString words them; before the generic `Cuda failure`, whose first candidate is Fabric Manager.
def test_cuda_uncorrectable_nvlink_and_ecc_errors_name_the_link_and_the_gpu(tmp_path):
    nvlink = f"{P}transport/nvls.cc:165 NCCL WARN Cuda failure 'uncorrectable NVLink error detected during the execution'\n"
    _, d = _diagnose(tmp_path, nvlink)
    assert _ranked(d) == ["nvlink_degraded"]
    _, d = _diagnose(tmp_path, "RuntimeError: CUDA error: uncorrectable ECC error encountered\n")
    assert _ranked(d) == ["gpu_xid_errors"]
    assert d["findings"][0]["next_step"].startswith("paste `dmesg | grep -i xid`")


# -- 2.24+ name both GIDs of a failed ibv_modify_qp ------------------------------------------------------
# misc/ibvwrap.cc ibvModifyQpLog (v2.24.3-1..v2.30.7-1): `local GID index N, local GID G, remote GID G`.
QP_TIMEOUT = (f"{P}misc/ibvwrap.cc:301 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, on dev "
              "mlx5_0:1, curr state INIT, next state RTR, local GID index {index}, local GID {local}, remote GID {remote}\n")


def test_a_qp_timeout_between_link_local_gids_decides_the_gid_index(tmp_path):
    text = QP_TIMEOUT.format(index=1, local="fe80::a288:c2ff:fe5b:3ec", remote="fe80::a288:c2ff:fe5b:374")
    assert facts(tmp_path, text)["log.nccl"]["errors"]["qp_timeout"]["details"] == [
        {"local_gid": "fe80::a288:c2ff:fe5b:3ec", "remote_gid": "fe80::a288:c2ff:fe5b:374", "gid_index": 1}]
    _, d = _diagnose(tmp_path, text)
    assert d["root_cause"]["id"] == "wrong_gid_index" and d["root_cause"]["confidence"] == "high"


def test_a_qp_timeout_between_routable_gids_of_two_subnets_is_cross_rail(tmp_path):
    _, d = _diagnose(tmp_path, QP_TIMEOUT.format(index=3, local="::ffff:10.0.0.1", remote="::ffff:10.0.1.1"))
    assert d["root_cause"]["id"] == "cross_rail_unreachable" and d["root_cause"]["confidence"] == "high"


def test_an_mnnvl_clique_without_imex_is_recognized_and_names_no_catalogue_cause(tmp_path):
    # mnnvl.cc (v2.27.3-1..v2.30.7-1): FABRIC handles that IMEX cannot export or import; IMEX is its own
    # service (not Fabric Manager), and the catalogue has no cause for it: said, not guessed.
    text = (f"{P}mnnvl.cc:63 NCCL WARN MNNVL (cliqueSize 72) is available but not working on this system. Check the "
            "IMEX channel configuration (/dev/nvidia-caps-imex-channels). Set NCCL_MNNVL_ENABLE=0 to ignore this issue.\n")
    rc, d = _diagnose(tmp_path, text)
    assert rc == 3 and d["findings"] == []
    assert any("IMEX channels" in i["reason"] for i in d["inconclusive"])


# -- perftest between the two hosts: the same completion status, the same QP setup ----------------------
# linux-rdma/perftest src/perftest_resources.h NOTIFY_COMP_ERROR_SEND (4.4-0.8..v4.5-0.20).
def test_an_ib_write_bw_retry_exceeded_has_the_candidates_of_nccls(tmp_path):
    text = " Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\nscnt=128, ccnt=0\n"
    assert list(facts(tmp_path, text)["log.nccl"]["errors"]) == ["retry_exceeded"]
    _, d = _diagnose(tmp_path, text)
    assert _ranked(d) == ["wrong_gid_index", "mtu_mismatch", "fabric_unreachable"]
    assert signatures.match(" Failed status 5: wr_id 0 syndrom 0xf9") is None  # a flush says nothing alone


def test_nics_of_two_link_layers_name_the_hca_selection(tmp_path):
    # net_ib.cc (v2.27.7-1) / net_ib/connect.cc (v2.30.7-1): "Try selecting NICs of only one link type using NCCL_IB_HCA".
    text = (f"{P}transport/net_ib.cc:1423 NCCL WARN NET/IB : Attempted to connect incompatible devices: "
            "[1]mlx5_1:1/RoCE and [0]mlx5_0:1/IB. Try selecting NICs of only one link type using NCCL_IB_HCA\n")
    _, d = _diagnose(tmp_path, text)
    assert _ranked(d) == ["wrong_ib_hca"] and d["findings"][0]["confidence"] == "medium"
