"""The derivations that keep a healthy production node healthy (issue 13), at their edges:
NCCL's automatic GID choice, the NCCL version from the mapped library, GPUDirect through
DMA-BUF, the slot's PCIe capability, the driver's global traffic class, the declared policy."""

from __future__ import annotations

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.domain import nccl_auto_gid, rated_gbps
from allreduce_doctor.errors import DoctorError
from allreduce_doctor.observations import MISSING, OK, Observation
from allreduce_doctor.probes.builtins import _lib_version
from allreduce_doctor.probes.derive_gdr import gpudirect
from allreduce_doctor.probes.derive_job import hca_selection, pci_links
from allreduce_doctor.probes.derive_roce import roce_priority, roce_traffic
from allreduce_doctor.site import declared, load_site

V1, V2 = 1, 2
MLX5_TABLE = {0: {"kind": "link_local", "version": V1}, 1: {"kind": "link_local", "version": V2},
              2: {"kind": "ipv4", "version": V1}, 3: {"kind": "ipv4", "version": V2}}
IPV6_ONLY = {0: {"kind": "link_local", "version": V1}, 1: {"kind": "link_local", "version": V2},
             2: {"kind": "global", "version": V1}, 3: {"kind": "global", "version": V2}}


def ok(value) -> Observation:
    return Observation("", value, OK)


def missing() -> Observation:
    return Observation("", None, MISSING, reason="not observed")


def test_nccl_picks_the_ipv4_roce_v2_gid_on_the_mlx5_layout():
    assert nccl_auto_gid(MLX5_TABLE) == 3


def test_nccl_stays_at_index_0_on_an_ipv6_only_port_unless_told_af_inet6():
    assert nccl_auto_gid(IPV6_ONLY) == 0
    assert nccl_auto_gid(IPV6_ONLY, "AF_INET6") == 3


def test_nccl_skips_roce_v1_when_asked_for_v2_and_takes_it_when_asked_for_v1():
    assert nccl_auto_gid({0: MLX5_TABLE[0], 1: MLX5_TABLE[2]}, "AF_INET", 2) == 1  # the family wins first
    assert nccl_auto_gid(MLX5_TABLE, "AF_INET", 1) == 2


@pytest.mark.parametrize("path, version", [
    ("/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", "2.21.5"),
    ("/opt/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2", None),
    ("", None),
])
def test_the_nccl_version_comes_from_the_mapped_library_name(path, version):
    assert _lib_version(path) == version


def test_adapter_ratings():
    assert (rated_gbps("MT4129"), rated_gbps("MT41692"), rated_gbps("MT4123"), rated_gbps("rxe")) == (400, 400, 200, None)


def _gdr(peermem=False, version="2.21.5", kernel="6.8.0-45-generic", driver="NVIDIA UNIX Open Kernel Module 550.90.07",
         env=None, log=None):
    inputs = {
        "gpu.peermem": ok(peermem), "log.nccl": ok(log) if log else missing(),
        "nccl.version": ok({"version": version}) if version else missing(),
        "nccl.env": ok({"vars": env or {}, "job_found": True}), "node.identity": ok({"kernel": kernel}),
        "gpu.driver": ok(driver) if driver else missing(),
    }
    return gpudirect(inputs).value


def test_dma_buf_makes_gpudirect_usable_without_peermem():
    assert _gdr()["usable"] is True


@pytest.mark.parametrize("change, failing", [
    ({"version": "2.12.12"}, "NCCL >= 2.13"),
    ({"kernel": "5.11.0-27-generic"}, "Linux >= 5.12"),
    ({"driver": "NVIDIA UNIX x86_64 Kernel Module 550.90.07"}, "NVIDIA open kernel module"),
    ({"env": {"NCCL_DMABUF_ENABLE": "0"}}, "NCCL_DMABUF_ENABLE not 0"),
])
def test_one_failed_dma_buf_condition_without_peermem_disables_gpudirect(change, failing):
    found = _gdr(**change)
    assert (found["usable"], found["why"]) == (False, f"DMA-BUF not usable: {failing} fails")


def test_an_unknown_nccl_version_without_peermem_is_unknown_not_disabled():
    found = _gdr(version=None)
    assert (found["usable"], found["why"]) == (None, "DMA-BUF unknown: NCCL >= 2.13 not known")


def test_peermem_or_a_gdrdma_log_line_is_enough():
    assert _gdr(peermem=True, version="2.12.12")["usable"] is True
    assert _gdr(version=None, log={"transports": ["NET/IB/0/GDRDMA"]})["usable"] is True


def _nic(cur_gts, cur_w=16):
    return {"name": "0000:1a:00.0", "current_speed_gts": cur_gts, "max_speed_gts": 32.0, "current_width": cur_w, "max_width": 16}


def _bridge(cap_gts):
    return {"bdf": "0000:e0:01.0", "secondary_bus": 0x1a, "subordinate_bus": 0x1a,
            "lnkcap": {"speed_gts": cap_gts, "width": 16}}


@pytest.mark.parametrize("nic, lspci, degraded", [
    (_nic(16.0), [_bridge(16.0)], False),  # a Gen5 NIC in a Gen4 slot: the platform's limit
    (_nic(16.0), [_bridge(32.0)], True),  # the slot can do Gen5: the link trained low
    (_nic(16.0), None, None),  # no slot capability (lspci needs root): slower is unknown
    (_nic(32.0, 8), None, True),  # fewer lanes is a fault whatever the slot
    (_nic(32.0), [_bridge(32.0)], False),
])
def test_a_nic_link_is_judged_against_its_slot(nic, lspci, degraded):
    inputs = {"pci.nics": ok([nic]), "pci.lspci": ok(lspci) if lspci is not None else missing()}
    assert pci_links(inputs).value[0]["degraded"] is degraded


def _ports(*names):
    return [{"name": f"{n}/1", "device": n, "port": "1", "link_layer": "InfiniBand", "hca_type": "MT4129",
             "state": {"name": "ACTIVE"}} for n in names]


def test_without_gpu_affinity_a_rail_left_out_is_unknown_not_wrong_ib_hca():
    inputs = {"rdma.ports": ok(_ports("mlx5_0", "mlx5_1", "mlx5_2")), "node.fabric": ok({"fabric": "ib"}),
              "nccl.env": ok({"vars": {"NCCL_IB_HCA": "=mlx5_0,mlx5_1"}, "job_found": True}), "gpu.topo": missing()}
    found = hca_selection(inputs)
    assert (found.value["left_out"], found.value["problem"]) == (["mlx5_2/1"], None)


def test_with_gpu_affinity_a_port_no_gpu_is_wired_to_is_not_a_rail():
    topo = {"matrix": {"GPU0": {"NIC0": "PIX", "NIC1": "NODE", "NIC2": "SYS"}, "GPU1": {"NIC0": "NODE", "NIC1": "PXB", "NIC2": "SYS"}},
            "nic_legend": {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2"}}
    inputs = {"rdma.ports": ok(_ports("mlx5_0", "mlx5_1", "mlx5_2")), "node.fabric": ok({"fabric": "ib"}),
              "nccl.env": ok({"vars": {"NCCL_IB_HCA": "=mlx5_0,mlx5_1"}, "job_found": True}), "gpu.topo": ok(topo)}
    found = hca_selection(inputs).value
    assert (found["rails"], found["not_rails"], found["problem"]) == (["mlx5_0/1", "mlx5_1/1"], ["mlx5_2/1 (ACTIVE)"], False)


def _priority(tc=None, tclass="", policy=None):
    qos = [{"name": "eth0", "pfc_enabled": [3], "trust": "dscp", "dscp2prio": {}}]
    env = {"vars": {} if tc is None else {"NCCL_IB_TC": tc}, "job_found": True}
    inputs = {"rdma.compute_ports": ok([{"name": "mlx5_0/1", "netdev": "eth0", "link_layer": "Ethernet"}]),
              "net.qos": ok(qos), "nccl.env": ok(env), "net.ecn_np": missing(), "net.ecn_rp": missing(),
              "rdma.tclass": ok([{"name": "mlx5_0/1", "traffic_class": tclass}]), "site.policy": ok(policy or {})}
    return roce_priority(inputs).value[0]


def _traffic(tx_bytes):
    stats = [{"name": "eth0", "delta": {f"tx_prio{p}_bytes": b for p, b in tx_bytes.items()}}]
    return roce_traffic({"roce.priority": ok([_priority()]), "net.ethtool_stats": ok(stats)}).value[0]


def test_the_drivers_global_traffic_class_overrides_an_unset_nccl_ib_tc():
    row = _priority(tclass="Global tclass=106\n")
    assert (row["tc"], row["priority"], row["pfc_on_priority"]) == (106, 3, True)


def test_nccl_ib_tc_minus_one_is_the_default_class_0():
    row = _priority(tc="-1")
    assert (row["tc"], row["priority"], row["pfc_on_priority"]) == (0, 0, False)


def test_the_priority_that_carried_the_bytes_is_where_the_traffic_went():
    assert _traffic({3: 11_600_000_000, 0: 1_000_000}) == {
        "name": "eth0", "priority": 3, "from": "tx_prioN_bytes", "busiest_priority": 3, "pfc_mismatch": False, "ecn_off": None,
        "ecn_off_known": None, "ecn_counters": "the congestion counters were not sampled twice"}  # no enable: the counters
    assert _traffic({3: 1_000, 0: 9_000})["pfc_mismatch"] is True
    # no priority carried half, or an idle window: the settings decide (NCCL_IB_TC unset -> priority 0)
    assert [(t["priority"], t["from"], t["pfc_mismatch"]) for t in (_traffic({3: 5, 0: 4, 1: 3}), _traffic({}))] == [
        (0, "settings", True), (0, "settings", True)]


def test_a_declared_lossy_fabric_and_traffic_class():
    row = _priority(policy={"roce_mode": "lossy", "nccl_ib_tc": 106, "source": "site.toml"})
    assert (row["declared_lossy"], row["tc"], row["priority"]) == (True, 106, 3)


def test_a_site_file_is_read_and_answers_override_it(tmp_path):
    site = tmp_path / "site.toml"
    site.write_text('[fabric]\nroce_mode = "lossless"\npfc_priority = 3\nlink_gbps = 400\n')
    policy = load_site(str(site))
    assert policy == {"roce_mode": "lossless", "pfc_priority": 3, "link_gbps": 400.0, "source": str(site)}
    assert declared(policy, {"roce_mode": "lossy", "validated_scale": "two_nodes"})["roce_mode"] == "lossy"


@pytest.mark.parametrize("text, message", [
    ('[fabric]\nroce_mode = "lossles"\n', "roce_mode = 'lossles': expected lossless or lossy"),
    ('[fabric]\npfc = 3\n', "unknown setting 'pfc'; known: roce_mode, pfc_priority, nccl_ib_tc, link_gbps"),
    ('[fabric\n', "not valid TOML (Expected ']' at the end of a table declaration (at line 1, column 8))"),
])
def test_a_bad_site_file_is_one_line(tmp_path, text, message):
    site = tmp_path / "site.toml"
    site.write_text(text)
    with pytest.raises(DoctorError) as err:
        load_site(str(site))
    assert str(err.value) == f"{site}: {message}"


def test_a_missing_default_site_file_declares_nothing_and_a_named_one_is_an_error(tmp_path, capsys):
    assert load_site(str(tmp_path / "absent.toml"), required=False) == {}
    assert main(["diagnose", "--site", str(tmp_path / "absent.toml"), "--evidence", str(tmp_path / "absent.txt")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"--site {tmp_path / 'absent.toml'}: no such file")


def test_a_bad_answer_for_the_policy_makes_the_policy_an_error_not_a_crash():
    from allreduce_doctor.probes.derive_job import site_policy

    found = site_policy({"site.declared": ok({}), "operator.answers": ok({"link_gbps": "fast"})})
    assert (found.status, found.reason) == ("error", "--answer: link_gbps = 'fast': expected a rate in Gb/s, e.g. 400")


def _ifname(spec: str, ifaces: Observation) -> Observation:
    from allreduce_doctor.probes.derive_job import socket_ifname

    env = ok({"job_found": True, "vars": {"NCCL_SOCKET_IFNAME": spec}})
    return socket_ifname({"nccl.env": env, "net.all_ifaces": ifaces})


def test_a_socket_ifname_on_a_node_whose_interfaces_were_not_read_is_unknown_not_fine():
    unread = Observation("", None, MISSING, reason="ip -o link: not installed")
    obs = _ifname("eth0", unread)
    assert (obs.status, obs.reason) == (MISSING, "NCCL_SOCKET_IFNAME=eth0 is set but this node's interfaces were "
                                                 "not read (ip -o link: not installed)")
    # what the spec alone decides is still decided: only loopback or virtual names
    assert _ifname("lo,docker0", unread).value["problem"] == "only loopback or virtual interfaces, which peers cannot reach"
    read = ok([{"name": "eth0"}, {"name": "ib0"}])
    assert _ifname("eth0", read).value == {"value": "eth0", "matched": ["eth0"], "problem": None}
    assert _ifname("enp", read).value["problem"] == "no interface on this node matches"
