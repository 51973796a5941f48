"""NET/IB lines of NCCL 2.23-2.30: a named completion status ranks as its number does, NICs of two
link types name the HCA selection, and a WARN of the IB data path (p2p.cc) is not CUDA P2P."""

from __future__ import annotations

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import ranked as _ranked


def _errors(d: dict) -> dict:
    return next(e["observed"] for e in d["evidence"] if e["fact"] == "log.nccl.errors")


# -- NCCL 2.29+ names the completion status: `status=IBV_WC_RETRY_EXC_ERR(12) ... vendor_err=N` -----
def test_a_named_completion_status_ranks_as_its_number_does(tmp_path):
    p = "gpu-node-1:4242:4301 [0] "
    using = f"{p}NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
    old = (f"{p}transport/net_ib.cc:2470 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<45123> with status=12 "
           "opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2 hca mlx5_0\n")
    new = (f"{p}transport/net_ib/p2p.cc:651 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<45123> with "
           "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  localGid ::ffff:10.0.0.1 "
           "remoteGids::ffff:10.0.0.2 hca mlx5_0\n")
    _, d_old, _ = _diagnose(tmp_path, using + old)
    _, d_new, _ = _diagnose(tmp_path, using + new)
    assert _ranked(d_new) == _ranked(d_old) == ["wrong_gid_index", "mtu_mismatch", "fabric_unreachable"]
    assert _errors(d_new)["retry_exceeded"]["details"] == [
        {"peer": "10.0.0.2", "local_gid": "::ffff:10.0.0.1", "remote_gid": "::ffff:10.0.0.2", "vendor_err": 129}]


# -- other NET/IB lines of 2.23-2.30 ----------------------------------------------------------------
def test_nics_of_two_link_types_name_the_hca_selection(tmp_path):
    line = ("gpu-node-1:4242:4301 [0] transport/net_ib.cc:1423 NCCL WARN NET/IB : Attempted to connect incompatible "
            "devices: [0]mlx5_0:1/IB and [8]mlx5_8:1/RoCE. Try selecting NICs of only one link type using NCCL_IB_HCA\n")
    _, d, path = _diagnose(tmp_path, line)
    assert _ranked(d)[0] == "wrong_ib_hca"
    assert d["findings"][0]["supporting"][0].startswith(f"{path}:1: transport/net_ib.cc NET/IB : Attempted to connect")


def test_a_warn_of_the_ib_data_path_file_p2p_cc_is_not_cuda_p2p():
    # From 2.29 the IB data path lives in transport/net_ib/p2p.cc: its file name says nothing of CUDA P2P.
    assert signatures.match("transport/net_ib/p2p.cc NET/IB: Got CQE with error (devIndex=0, req=0x1, comm=0x2 "
                            "(recv), wr_id=5, qp_num=77)").kind == "completion_error"
    assert signatures.match("transport/net_ib/connect.cc NET/IB: mlx5dv_create_qp failed to create QP: "
                            "Invalid argument").kind == "qp_failed"
    assert signatures.match("transport/p2p.cc P2P : cudaIpcOpenMemHandle failed").kind == "cuda_p2p"
