"""The transport each rank uses: ranks that disagree on the net plugin use different transports, a
search that tries a name then loads the plugin is one; a QP without a net device names the GID
index among its causes."""

from __future__ import annotations

import json

from tests.evidence.helpers import cli

P = "gpu-node-1:4242:4301 [0] "


def _diagnose(tmp_path, text: str, *extra: str):
    path = tmp_path / "paste.txt"
    path.write_text(text)
    proc = cli("diagnose", "--evidence", str(path), "--format", "json", *extra)
    return proc.returncode, json.loads(proc.stdout), path


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
