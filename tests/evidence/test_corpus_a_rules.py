"""Rules added for the field corpus (issue 12, corpus A), each from a primary source: NCCL's
ncclInternalError as nccl-tests and PyTorch print it, and an Istio sidecar in the pod. Through
the CLI (diagnose --evidence FILE --format json), as an engineer pastes them."""

from __future__ import annotations

import json

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import cli

P = "gpu-node-1:4242:4301 [0] "
BOOTSTRAP = (f"{P}NCCL INFO Bootstrap : Using eth0:10.0.130.10<0>\n"
             f"{P}NCCL INFO NCCL version 2.23.4+cuda12.2\n")


def _diagnose(tmp_path, text: str, *extra: str):
    path = tmp_path / "paste.txt"
    path.write_text(text)
    proc = cli("diagnose", "--evidence", str(path), "--format", "json", *extra)
    return proc.returncode, json.loads(proc.stdout), path


def test_a_lone_internal_error_is_read_and_ranks_what_returns_it(tmp_path):
    # NCCL 2.12-2.23 bootstrap.cc returns ncclInternalError for `no socket interface found` and for a
    # truncated bootstrap message; nccl-tests prints only the result string.
    line = "node-2: Test NCCL failure common.cu:1017 'internal error - please report this issue to the NCCL developers / '"
    rc, d, path = _diagnose(tmp_path, line + "\n")
    assert rc == 3 and d["verdict"] == "inconclusive" and d["healthy"] is None
    assert [(f["cause"], f["confidence"]) for f in d["findings"]] == \
        [("wrong_socket_ifname", "low"), ("nccl_version_mismatch", "low")]
    assert d["findings"][0]["supporting"] == [f"{path}:1: {line}"]
    assert d["findings"][1]["next_step"] == "paste the `NCCL version` line of every host"


def test_the_short_wording_of_older_nccl_is_the_same_kind(tmp_path):
    line = "ip-0AB85F07: Test NCCL failure common.cu:775 'internal error'"  # ncclGetErrorString up to 2.17
    assert signatures.match(line).kind == "internal_error"
    _, d, _ = _diagnose(tmp_path, line + "\n")
    assert [f["cause"] for f in d["findings"]] == ["wrong_socket_ifname", "nccl_version_mismatch"]


def test_a_word_internal_error_in_prose_is_no_signal():
    assert signatures.match("we hit an internal error in our scheduler") is None


def test_an_istio_sidecar_beside_a_hung_init_points_at_the_mesh(tmp_path):
    text = "the pods themselves have istio-proxy envoy\n" + BOOTSTRAP
    rc, d, path = _diagnose(tmp_path, text, "--symptom", "hang")
    assert rc == 3 and d["root_cause"]["id"] == "socket_blocked"
    first = d["findings"][0]
    assert first["confidence"] == "low"
    assert first["supporting"] == [f"{path}:1: the pods themselves have istio-proxy envoy"]
    assert "sidecar.istio.io/inject" in first["next_step"]


def test_the_same_bootstrap_lines_without_the_sidecar_name_no_cause(tmp_path):
    rc, d, _ = _diagnose(tmp_path, BOOTSTRAP, "--symptom", "hang")
    assert rc == 3 and d["root_cause"] is None and d["findings"] == []


def _conn(host: str, via: str, direction: str = "send") -> str:
    return f"{host}:22612:22693 [0] NCCL INFO Channel 00/0 : 0[7000] -> 8[7000] [{direction}] via {via}\n"


def _gdr_step(d: dict) -> dict:
    return next(p for p in d["path"] if p["node"] == "nccl_log.gdr")


def test_a_host_whose_net_connections_never_use_gdrdma_has_gpudirect_rdma_off(tmp_path):
    # NCCL's GDR support check is node-wide (net_ib ncclIbGdrSupport): one node without the peer
    # memory module prints no /GDRDMA while its peers do (NVIDIA/nccl#897, NVIDIA/nccl-tests#152).
    text = (_conn("gpu32", "NET/IB/1/GDRDMA") + _conn("gpu32", "NET/IB/1/GDRDMA/Shared")
            + _conn("gpu37", "NET/IB/0", "receive") + _conn("gpu37", "NET/IB/5/Shared", "receive"))
    rc, d, _ = _diagnose(tmp_path, text)
    assert d["root_cause"]["id"] == "gdr_disabled"
    step = _gdr_step(d)
    assert step["outcome"] == "yes" and step["value"]["log.job.gdr.hosts_without"] == ["gpu37"]


def test_connections_without_gdrdma_on_every_host_are_topology_not_a_host(tmp_path):
    # Each host has GDR on its near NIC and not on a far one (distance > NCCL_NET_GDR_LEVEL).
    text = (_conn("gpu32", "NET/IB/1/GDRDMA") + _conn("gpu32", "NET/IB/5")
            + _conn("gpu37", "NET/IB/1/GDRDMA", "receive") + _conn("gpu37", "NET/IB/5", "receive"))
    _, d, _ = _diagnose(tmp_path, text)
    step = _gdr_step(d)
    assert step["outcome"] == "no" and step["value"]["log.job.gdr.hosts_without"] == []
    assert "gdr_disabled" not in [f["cause"] for f in d["findings"]]


def test_mixed_gdrdma_on_lines_that_name_no_host_stays_open(tmp_path):
    text = ("9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n"
            "9[1a000] -> 2[6b000] [receive] via NET/IB/1\n")
    _, d, _ = _diagnose(tmp_path, text)
    step = _gdr_step(d)
    assert step["outcome"] == "unknown" and step["value"]["log.job.gdr.hosts_without"] is None
    assert [(f["cause"], f["confidence"]) for f in d["findings"]] == [("gdr_disabled", "low")]


def test_a_qp_without_a_net_device_names_the_gid_index_among_its_causes(tmp_path):
    # Linux core/cache.c rdma_read_gid_l2_fields: ENODEV for a source GID entry with no netdev.
    _, d, _ = _diagnose(tmp_path, f"{P}misc/ibvwrap.cc:284 NCCL WARN Call to ibv_modify_qp failed with error No such device\n")
    assert [f["cause"] for f in d["findings"]] == ["container_network_isolation", "wrong_gid_index", "wrong_ib_hca"]
    assert d["findings"][1]["next_step"] == "paste `show_gids` inside each pod or container and the job's NCCL_IB_GID_INDEX"


def test_ranks_that_disagree_on_the_net_plugin_use_different_transports(tmp_path):
    # NCCL 2.23 net.cc ends a failed search with `Using internal network plugin`; the HPC-X plugin
    # prints `Plugin Path :` from its init, so that rank runs IBext while the other runs IB.
    text = ("HGX-H100-11:18226:18274 [5] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.\n"
            "HGX-H100-04:589474:589541 [0] NCCL INFO Plugin Path : /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n")
    _, d, _ = _diagnose(tmp_path, text)
    assert d["root_cause"]["id"] == "asymmetric_transport"
    step = next(p for p in d["path"] if p["node"] == "nccl_log.asymmetric")
    assert step["outcome"] == "yes" and step["value"]["log.nccl.network"] == "mixed"


def test_a_search_that_tries_a_name_then_loads_the_plugin_is_one_transport(tmp_path):
    # NCCL 2.21 prints `No plugin found (NAME)` for each name it tries before one opens.
    text = (f"{P}NCCL INFO NET/Plugin: No plugin found (libnccl-net-ib.so)\n"
            f"{P}NCCL INFO NET/Plugin: Loaded net plugin NCCL RDMA Plugin v7 (v7)\n")
    _, d, _ = _diagnose(tmp_path, text)
    step = next(p for p in d["path"] if p["node"] == "nccl_log.asymmetric")
    assert step["outcome"] == "no" and step["value"]["log.nccl.network"] != "mixed"
