"""nccl.net_plugin (probes/derive_plugin.py): EFA and GPUDirect-TCPX/TCPXO nodes are plugin nodes,
and what decides loaded / efa provider / FI_PROVIDER / FI_EFA_USE_DEVICE_RDMA, edge by edge."""

from allreduce_doctor.observations import MISSING, OK, Observation
from allreduce_doctor.probes.derive_plugin import GDR_REQUIRED, net_plugin

OFI, FABRIC = "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", "/opt/amazon/efa/lib/libfabric.so.1"


def _job(**over):
    job = {"pid": 1, "root": "/proc/1/root", "mapped": [OFI, FABRIC], "rdma_mapped": [], "files": [OFI, FABRIC],
           "plugin_on_path": [OFI], "uverbs": ["/dev/infiniband/uverbs0"]}
    return {**job, **over}


def _facts(job=None, env=None, efa=("rdmap79s0",), gvnic=(), product="p5.48xlarge", log=None):
    def ok(v):
        return Observation("", v, OK)

    return {"net.plugin_devices": ok({"efa": list(efa), "gvnic": list(gvnic)}),
            "nccl.job_net": ok(job) if job is not None else Observation("", None, MISSING),
            "nccl.env": ok({"vars": env or {}}), "rdma.ports": ok([]), "node.dmi": ok({"product_name": product}),
            "nccl.version": ok({"version": "2.23.4"}),
            "log.nccl": ok({"network": log}) if log else Observation("", None, MISSING)}


def test_a_healthy_p5_job_is_a_loaded_ofi_plugin_with_efa():
    v = net_plugin(_facts(_job())).value
    assert (v["wanted"], v["platform"], v["kind"], v["loaded"], v["job_devices"], v["efa_provider"],
            v["provider_forced"], v["gdr_off"]) == (True, "efa", "ofi", True, True, True, "", False)


def test_efa_ports_seen_only_by_their_unknown_link_layer_are_efa():
    facts = _facts(_job(), efa=())
    facts["rdma.ports"] = Observation("", [{"device": "rdmap79s0", "link_layer": "Unknown"}], OK)
    assert net_plugin(facts).value["platform"] == "efa"


def test_without_a_job_loaded_is_unknown_and_says_what_decides_it():
    v = net_plugin(_facts(None)).value
    assert v["wanted"] and v["loaded"] is None and "paste NCCL_DEBUG=INFO" in v["loaded_why"] and "NET/OFI" in v["loaded_why"]


def test_not_mapped_is_not_loaded_only_when_nothing_is_on_the_path():
    assert net_plugin(_facts(_job(mapped=[], plugin_on_path=[]))).value["loaded"] is False
    assert net_plugin(_facts(_job(mapped=[]))).value["loaded"] is None  # NCCL not initialized yet
    assert net_plugin(_facts(_job(mapped=None))).value["loaded"] is None  # a bundle before the scan


def test_a_mapped_plugin_outranks_a_log_saying_socket():
    assert net_plugin(_facts(_job(), log="Socket")).value["loaded"] is True
    assert net_plugin(_facts(None, log="AWS Libfabric")).value["loaded"] is True


def test_libfabric_without_efa_only_when_nothing_could_hide_it():
    other = "/usr/local/lib/libfabric.so.1"
    assert net_plugin(_facts(_job(mapped=[OFI, other]))).value["efa_provider"] is False
    assert net_plugin(_facts(_job(mapped=[OFI, other], rdma_mapped=["/usr/lib/libefa.so.1"]))).value["efa_provider"] is None
    assert net_plugin(_facts(_job(mapped=[OFI, other], files=["/usr/local/lib/libfabric/libefa-fi.so"]))).value["efa_provider"]


def test_fi_provider_steering_away_from_efa():
    def forced(value):
        return net_plugin(_facts(_job(), {"FI_PROVIDER": value})).value["provider_forced"]

    assert [forced(x) for x in ("tcp", "sockets", "^efa", "efa", "efa,tcp", "^tcp")] == ["tcp", "sockets", "^efa", "", "", ""]


def test_device_rdma_off_matters_on_instances_that_require_gpudirect():
    off = {"FI_EFA_USE_DEVICE_RDMA": "0"}
    assert net_plugin(_facts(_job(), off)).value["gdr_off"] is True
    assert net_plugin(_facts(_job(), off, product="p5.4xlarge")).value["gdr_off"] is False
    assert net_plugin(_facts(_job(), off, product="")).value["gdr_off"] is None
    assert net_plugin(_facts(_job(), {"FI_EFA_USE_DEVICE_RDMA": "1"})).value["gdr_off"] is False
    assert [bool(GDR_REQUIRED.match(p)) for p in ("p4d.24xlarge", "p4de.24xlarge", "p5e.48xlarge", "p5en.48xlarge",
                                                 "p6-b200.48xlarge", "p3dn.24xlarge", "g5.48xlarge")] == [True] * 5 + [False] * 2


def test_gcp_layouts_and_named_plugins():
    tcpx = "/usr/local/tcpx/lib64/libnccl-net.so"
    v = net_plugin(_facts(_job(mapped=[tcpx]), {"NCCL_GPUDIRECTTCPX_SOCKET_IFNAME": "eth1"}, efa=(),
                          gvnic=("eth0", "eth1"), product="Google Compute Engine")).value
    assert (v["wanted"], v["platform"], v["kind"], v["loaded"], v["job_devices"], v["gdr_off"]) == (True, "gvnic", "tcpx", True, None, False)
    named = net_plugin(_facts(_job(mapped=[]), {"NCCL_NET": "FasTrak"}, efa=(), product="")).value
    assert (named["wanted"], named["kind"]) == (True, "tcpxo")
    plain = net_plugin(_facts(_job(mapped=[]), {}, efa=(), gvnic=("eth0",), product="")).value
    assert (plain["wanted"], plain["kind"]) == (False, "")
