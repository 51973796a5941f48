import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse


def test_dscp_trust_pfc(fixture_text):
    qos = parse("mlnx_qos", fixture_text("mlnx_qos-dscp-trust-pfc.txt"))
    assert qos["dcbx_mode"] == "OS controlled"
    assert qos["trust"] == "dscp"
    assert qos["pfc_enabled"] == [0, 2, 6, 7]
    assert qos["dscp2prio"]["26"] == 3
    assert qos["dscp2prio"]["46"] == 5
    assert qos["dscp2prio"]["0"] == 0 and qos["dscp2prio"]["63"] == 7
    assert len(qos["dscp2prio"]) == 64
    assert all(qos["dscp2prio"][str(d)] == d >> 3 for d in range(64))  # default map
    assert qos["cable_len"] == 10
    assert qos["tcs"]["0"] == {"priorities": [1], "tsa": "ets", "bw": 10, "ratelimit": "unlimited"}
    assert qos["tcs"]["6"] == {"priorities": [6], "tsa": "strict", "bw": None, "ratelimit": "unlimited"}
    assert qos["tcs"]["7"]["bw"] == 40
    assert qos["buffers"] is None and qos["prio2buffer"] is None


def test_pfc_fragment(fixture_text):
    qos = parse("mlnx_qos", fixture_text("mlnx_qos-pfc-prio3-fragment.txt"))
    assert qos["pfc_enabled"] == [3]
    assert qos["trust"] is None and qos["dscp2prio"] is None and qos["tcs"] == {}


def test_newer_layout_with_buffers_and_tabs():
    text = (
        "DCBX mode: OS controlled\n"
        "Priority trust state: pcp\n"
        "default priority:\n"
        "Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=262016\n"
        "Cable len: 7\n"
        "PFC configuration:\n"
        "\tpriority    0   1   2   3   4   5   6   7\n"
        "\tenabled     0   0   0   1   0   0   0   0   \n"
        "\tbuffer      0   0   0   1   0   0   0   0   \n"
        "tc: 0 ratelimit: unlimited, tsa: vendor\n"
        "\t priority:  1\n"
        "tc: 1 ratelimit: unlimited, tsa: vendor\n"
        "\t priority:  0\n"
        "\t priority:  2\n"
    )
    qos = parse("mlnx_qos", text)
    assert qos["trust"] == "pcp" and qos["dscp2prio"] is None
    assert qos["pfc_enabled"] == [3]
    assert qos["prio2buffer"] == [0, 0, 0, 1, 0, 0, 0, 0]
    assert qos["buffers"] == [130944, 130944, 0, 0, 0, 0, 0, 0]
    assert qos["tcs"]["1"]["priorities"] == [0, 2]
    assert qos["tcs"]["0"]["tsa"] == "vendor"


@pytest.mark.parametrize("text", ["", "\n", "Netlink error: Operation not supported\n"])
def test_empty_or_garbled(text):
    with pytest.raises(ParseError):
        parse("mlnx_qos", text)
