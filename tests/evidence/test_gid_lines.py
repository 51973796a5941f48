"""GID lines across NCCL versions: a GID table change in each wording names GID drift; ENODEV with a
pinned index decides the index; an unreadable GID type; a QP timeout between link-local GIDs
decides the index, between routable GIDs of two subnets is cross-rail."""

from __future__ import annotations

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_rc_json as _diagnose
from tests.evidence.helpers import facts
from tests.evidence.helpers import ranked as _ranked

P = "node-a:4242:4301 [3] "


# -- the GID table changed: three wordings across NCCL versions --------------------------------------
# ncclIbAsyncThreadMain: `Got async event : GID table change` to 2.22; 2.23-2.28.3 have no case for
# IBV_EVENT_GID_CHANGE (18) and print `unknown event type (18)`; 2.28.9+ `GID table changed`.
def test_a_gid_table_change_in_each_wording_names_gid_drift(tmp_path):
    for message in ("NET/IB : mlx5_0:1 unknown event type (18)", "NET/IB : mlx5_0:1 GID table changed"):
        _, d = _diagnose(tmp_path, f"{P}transport/net_ib.cc:204 NCCL WARN {message}\n")
        assert _ranked(d) == ["gid_index_drift"], message
    assert signatures.match("NET/IB : mlx5_0:1 unknown event type (19)").kind == "ib_async_event"  # IBV_EVENT_WQ_FATAL


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


# -- the GID entry NCCL reads is empty in this pod (2.23+ ncclIbRoceGetVersionNum) ----------------------
def test_an_unreadable_gid_type_names_the_index_then_the_pod_network(tmp_path):
    text = f"{P}transport/net_ib.cc:359 NCCL WARN NET/IB: read failed in ncclIbRoceGetVersionNum: Invalid argument\n"
    _, d = _diagnose(tmp_path, text)
    assert _ranked(d) == ["wrong_gid_index", "container_network_isolation"]
    assert d["findings"][0]["next_step"] == "paste `show_gids` inside each pod or container and the job's NCCL_IB_GID_INDEX"


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
