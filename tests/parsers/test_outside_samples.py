"""Outside samples (data no one here wrote; sources in each fixture's header) that parsed wrong or
raised: each must give the right value, or a ParseError, never a bogus value or a TypeError."""

from __future__ import annotations

import pytest

from allreduce_doctor.doctor import load_catalogue as load_probe_catalogue
from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse
from allreduce_doctor.probes.enumerate import Enumerator
from allreduce_doctor.probes.execute import run_probe
from tests.parsers.conftest import read_fixture
from tests.scenarios.fakehost import FakeHost


def test_no_pma_counter_is_unavailable_not_the_port_unreadable():
    no_pma = read_fixture("sysfs-counter-no-pma.txt")
    base = "/sys/class/infiniband/iwp0s1/ports/1"
    host = FakeHost(files={
        f"{base}/link_layer": "Ethernet\n",
        f"{base}/counters/symbol_error": no_pma,
        f"{base}/counters/port_rcv_errors": no_pma,
        f"{base}/counters/port_xmit_data": "1234\n",
    })
    catalogue = load_probe_catalogue()
    obs, _ = run_probe(catalogue.probes["rdma_counters"], host, Enumerator(host, catalogue.enumerators))
    assert obs.status == "ok"
    [port] = obs.value
    assert (port["symbol_error"], port["port_rcv_errors"], port["port_xmit_data"]) == (None, None, 1234)
    assert "_status" not in port


def test_no_pma_on_every_counter_keeps_the_port_readable():
    base = "/sys/class/infiniband/iwp0s1/ports/1"
    host = FakeHost(files={f"{base}/link_layer": "Ethernet\n",
                           f"{base}/counters/symbol_error": read_fixture("sysfs-counter-no-pma.txt")})
    catalogue = load_probe_catalogue()
    obs, _ = run_probe(catalogue.probes["rdma_counters"], host, Enumerator(host, catalogue.enumerators))
    assert obs.status == "ok" and obs.value[0]["symbol_error"] is None


def test_node_exporter_error_fixture_is_not_a_counter():
    with pytest.raises(ParseError):
        parse("ethtool_stats", read_fixture("ethtool-S-node_exporter-error.txt"))


def test_error_line_among_counters_is_dropped():
    assert parse("ethtool_stats", "NIC statistics:\n     rx_packets: 5\nERROR: 1\n") == {"rx_packets": 5}


def test_bonding_masters_is_not_an_interface():
    names = read_fixture("sysfs-class-net-with-bonding_masters.txt").split()
    host = FakeHost(files={f"/sys/class/net/{name}/operstate": "up\n" for name in names if name != "bonding_masters"}
                    | {"/sys/class/net/bonding_masters": "bond0\n"})
    items = Enumerator(host, load_probe_catalogue().enumerators).items("any_netdev")
    assert [item["name"] for item in items] == ["bond0", "eth0", "eth1", "lo"]


def test_cmdline_without_iommu_is_the_kernel_default_not_unreadable():
    value = parse("proc_cmdline", read_fixture("proc-cmdline-no-iommu-arch.txt"))
    assert value["iommu"] == "default" and value["iommu_passthrough"] is False
    assert value["args"]["loglevel"] == "3"


def test_cmdline_with_an_unrecognised_iommu_word_stays_unknown():
    assert parse("proc_cmdline", "ro intel_iommu=igfx_off")["iommu"] is None


def test_ibstat_ports_line_keeps_the_port_table():
    value = parse("ibstat", read_fixture("ibstat-ports-line.txt"))
    device = value["devices"]["mlx5_0"]
    assert device["num_ports"] == 1
    assert device["ports"]["1"]["state"] == "Active" and device["ports"]["1"]["rate"] == 200
