import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse


def port1(result, device):
    return result["devices"][device]["ports"]["1"]


def test_ndr_h100_all_active(fixture_text):
    result = parse("ibstat", fixture_text("ibstat-ndr-h100-ib-all-active.txt"))
    mlx5_0 = result["devices"]["mlx5_0"]
    assert mlx5_0["ca_type"] == "MT4129"
    assert mlx5_0["num_ports"] == 1
    assert mlx5_0["firmware"] == "28.41.1000"
    assert mlx5_0["hardware_version"] == "0"
    assert mlx5_0["node_guid"] == "0x58a2e10300a7820e"
    assert port1(result, "mlx5_0") == {
        "state": "Active",
        "physical_state": "LinkUp",
        "rate": 400.0,
        "base_lid": 128,
        "lmc": 0,
        "sm_lid": 1,
        "capability_mask": "0xa751e848",
        "port_guid": "0x58a2e10300a7820e",
        "link_layer": "InfiniBand",
    }
    # the BlueField-3 bond at the end is an Ethernet port at 200
    assert port1(result, "mlx5_bond_0")["rate"] == 200.0
    assert port1(result, "mlx5_bond_0")["link_layer"] == "Ethernet"
    assert result["errors"] == []


def test_roce_some_down_polling_and_disabled(fixture_text):
    result = parse("ibstat", fixture_text("ibstat-roce-h100-some-down-polling.txt"))
    states = {dev: (port1(result, dev)["state"], port1(result, dev)["physical_state"]) for dev in result["devices"]}
    assert states["mlx5_11"] == ("Down", "Polling")
    assert states["mlx5_5"] == ("Down", "Disabled")
    down = {dev for dev, (state, _) in states.items() if state != "Active"}
    assert down == {"mlx5_11", "mlx5_5"}
    assert len(states) == 12
    assert port1(result, "mlx5_11")["rate"] == 40.0
    assert all(port1(result, dev)["link_layer"] == "Ethernet" for dev in states)


def test_ibpanic_keeps_devices_and_records_error(fixture_text):
    result = parse("ibstat", fixture_text("ibstat-hdr-a100-ibpanic.txt"))
    assert sorted(result["devices"]) == [f"mlx5_{i}" for i in range(8)]
    assert result["errors"] == [
        "ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory"
    ]
    assert port1(result, "mlx5_7")["base_lid"] == 13305
    assert result["devices"]["mlx5_0"]["ca_type"] == "MT4124"


def test_mixed_ib_and_ethernet_vfs(fixture_text):
    result = parse("ibstat", fixture_text("ibstat-mixed-ib-eth-a100.txt"))
    assert port1(result, "mlx5_0")["link_layer"] == "Ethernet"
    assert result["devices"]["mlx5_0"]["firmware"] == "22.35.2302"
    assert port1(result, "mlx5_1")["link_layer"] == "InfiniBand"
    assert port1(result, "mlx5_1")["sm_lid"] == 83
    assert port1(result, "mlx5_8")["port_guid"] == "0x4c1037318e9cd20a"


def test_roce_all_active(fixture_text):
    result = parse("ibstat", fixture_text("ibstat-roce-h100-all-active.txt"))
    rates = {dev: port1(result, dev)["rate"] for dev in result["devices"]}
    assert rates["mlx5_0"] == 400.0 and rates["mlx5_1"] == 100.0
    assert {port1(result, dev)["state"] for dev in result["devices"]} == {"Active"}


def test_ibstatus_hdr(fixture_text):
    result = parse("ibstatus", fixture_text("ibstatus-hdr-a100-active.txt"))
    assert result["ports"]["mlx5_0/1"] == {
        "default_gid": "fe80:0000:0000:0000:0015:5dff:fd34:11eb",
        "base_lid": 0x33BF,
        "sm_lid": 1,
        "state": {"code": 4, "name": "ACTIVE"},
        "phys_state": {"code": 5, "name": "LinkUp"},
        "rate": {"gbps": 200.0, "width": 4, "speed": "HDR"},
        "link_layer": "InfiniBand",
    }
    # the last block is an Ethernet port whose default gid reads 'unknown'
    assert result["ports"]["mlx5_8/1"]["default_gid"] is None
    assert result["ports"]["mlx5_8/1"]["rate"] == {"gbps": 40.0, "width": 4, "speed": "QDR"}
    assert result["ports"]["mlx5_8/1"]["link_layer"] == "Ethernet"


def test_ibstatus_roce_100g(fixture_text):
    result = parse("ibstatus", fixture_text("ibstatus-roce-100g-ethernet.txt"))
    assert sorted(result["ports"]) == ["mlx5_0/1", "mlx5_1/1"]
    port = result["ports"]["mlx5_1/1"]
    assert port["rate"] == {"gbps": 100.0, "width": 4, "speed": "EDR"}
    assert (port["base_lid"], port["sm_lid"], port["link_layer"]) == (0, 0, "Ethernet")


def test_ibstatus_odd_field_does_not_lose_the_port():
    text = "Infiniband device 'mlx5_0' port 1 status:\n\tstate:\t garbage\n\trate:\t 400 Gb/sec (4X NDR)\n"
    port = parse("ibstatus", text)["ports"]["mlx5_0/1"]
    assert port["state"] is None and port["rate"]["gbps"] == 400.0


@pytest.mark.parametrize("name", ["ibstat", "ibstatus"])
@pytest.mark.parametrize("text", ["", "   \n", "hello world\nState: Active\n"])
def test_empty_or_garbled(name, text):
    with pytest.raises(ParseError):
        parse(name, text)


def test_ibstat_only_panic_is_not_an_error():
    result = parse("ibstat", "ibpanic: [12] main: no IB devices found\n")
    assert result == {"devices": {}, "errors": ["ibpanic: [12] main: no IB devices found"]}
