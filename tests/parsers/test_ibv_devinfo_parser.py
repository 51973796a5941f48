import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse


def test_softroce_mtu_mismatch(fixture_text):
    result = parse("ibv_devinfo", fixture_text("ibv_devinfo-v-softroce-rxe-mtu1024.txt"))
    rxe = result["devices"]["rxe0"]
    assert rxe["fw_ver"] == "0.0.0"
    assert rxe["vendor_part_id"] == 0
    assert rxe["transport"] == "InfiniBand"
    port = rxe["ports"]["1"]
    assert (port["max_mtu"], port["active_mtu"]) == (4096, 1024)
    assert port["state"] == "PORT_ACTIVE"
    assert port["link_layer"] == "Ethernet"
    assert (port["active_width"], port["active_speed_gbps"], port["rate_gbps"]) == (1, 2.5, 2.5)
    # older rdma-core prints no ', RoCE v2' suffix: the type is unknown, not guessed
    assert port["gids"] == [
        {"index": 0, "gid": "fe80:0000:0000:0000:b208:75ff:fe5f:b85e", "type": None},
        {"index": 1, "gid": "0000:0000:0000:0000:0000:ffff:0a0b:0bfb", "type": None},
    ]


def test_connectx6dx_roce_bond(fixture_text):
    result = parse("ibv_devinfo", fixture_text("ibv_devinfo-vv-connectx6dx-roce-bond.txt"))
    bond = result["devices"]["mlx5_bond_0"]
    assert (bond["fw_ver"], bond["vendor_part_id"], bond["vendor_id"]) == ("22.36.1010", 4125, "0x02c9")
    assert bond["board_id"] == "MT_0000000359"
    port = bond["ports"]["1"]
    assert (port["max_mtu"], port["active_mtu"]) == (4096, 4096)
    assert (port["active_width"], port["active_speed_gbps"], port["rate_gbps"]) == (2, 50.0, 100.0)
    assert port["phys_state"] == "LINK_UP"
    gids = {g["index"]: g for g in port["gids"]}
    assert gids[3] == {"index": 3, "gid": "0000:0000:0000:0000:0000:ffff:1b69:b303", "type": "RoCE v2"}
    assert gids[1]["gid"] == "fe80:0000:0000:0000:0ac0:ebff:fef0:28b2"
    assert [g["type"] for g in port["gids"]] == ["RoCE v1", "RoCE v2", "RoCE v1", "RoCE v2"]


def test_several_hca_blocks(fixture_text):
    one = fixture_text("ibv_devinfo-vv-connectx6dx-roce-bond.txt")
    two = fixture_text("ibv_devinfo-v-softroce-rxe-mtu1024.txt")
    result = parse("ibv_devinfo", one + "\n" + two)
    assert sorted(result["devices"]) == ["mlx5_bond_0", "rxe0"]
    assert result["devices"]["mlx5_bond_0"]["ports"]["1"]["active_mtu"] == 4096


def test_no_devices_message():
    assert parse("ibv_devinfo", "No IB devices found\n") == {"devices": {}}


@pytest.mark.parametrize("text", ["", "\t\n", "port: 1\nstate: PORT_ACTIVE (4)\n"])
def test_empty_or_garbled(text):
    with pytest.raises(ParseError):
        parse("ibv_devinfo", text)
