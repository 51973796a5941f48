import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse


def test_connectx6_ipv4_v2_is_index_5(fixture_text):
    rows = parse("show_gids", fixture_text("show_gids-roce-connectx6-ipv4.txt"))
    assert [r["index"] for r in rows] == [0, 1, 2, 3, 4, 5]
    assert rows[5] == {
        "dev": "mlx5_0",
        "port": 1,
        "index": 5,
        "gid": "0000:0000:0000:0000:0000:ffff:ac13:003c",
        "ipv4": "172.19.0.60",
        "version": 2,
        "ndev": "ens1f0",
    }
    v2_ipv4 = [r["index"] for r in rows if r["version"] == 2 and r["ipv4"]]
    assert v2_ipv4 == [5]
    assert rows[3]["ipv4"] is None and rows[3]["version"] == 2


def test_empty_in_container_is_an_empty_list(fixture_text):
    assert parse("show_gids", fixture_text("show_gids-empty-in-container.txt")) == []


def test_ib_port_row_without_netdev():
    text = "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\nmlx5_0\t1\t0\tfe80:0000:0000:0000:0015:5dff:fd34:11eb\t\t\tv1\t\nn_gids_found=1\n"
    assert parse("show_gids", text) == [
        {
            "dev": "mlx5_0",
            "port": 1,
            "index": 0,
            "gid": "fe80:0000:0000:0000:0015:5dff:fd34:11eb",
            "ipv4": None,
            "version": 1,
            "ndev": None,
        }
    ]


@pytest.mark.parametrize("text", ["", "\n\n", "no gids here\njust words\n"])
def test_empty_or_garbled(text):
    with pytest.raises(ParseError):
        parse("show_gids", text)
