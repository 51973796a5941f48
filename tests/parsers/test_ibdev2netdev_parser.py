import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse


def test_h100_cx7_ib_plus_cx6_eth(fixture_text):
    rows = parse("ibdev2netdev", fixture_text("ibdev2netdev-h100-ib-cx7-plus-cx6-eth.txt"))
    assert len(rows) == 12
    assert rows[0] == {"device": "mlx5_0", "port": 1, "netdev": "ibp26s0", "up": False}
    assert rows[1] == {"device": "mlx5_1", "port": 1, "netdev": "enp27s0f0np0", "up": True}
    up = sorted(r["device"] for r in rows if r["up"])
    assert up == ["mlx5_1", "mlx5_7"]


def test_verbose_form():
    text = (
        "0000:1a:00.0 mlx5_0 (MT4129 - MCX75310AAS-NEAT) NVIDIA ConnectX-7 fw 28.39.1002 "
        "port 1 (ACTIVE) ==> ibp26s0 (Up)\n"
    )
    assert parse("ibdev2netdev", text) == [{"device": "mlx5_0", "port": 1, "netdev": "ibp26s0", "up": True}]


def test_no_devices_is_an_empty_list():
    assert parse("ibdev2netdev", "") == []


def test_garbled():
    with pytest.raises(ParseError):
        parse("ibdev2netdev", "mlx5_0 is somewhere\n==> nowhere\n")
