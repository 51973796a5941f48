import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse


def test_pfc_prio3_with_stats(fixture_text):
    pfc = parse("dcb_pfc", fixture_text("dcb-j-pfc-show-prio3-stats.txt"))
    assert pfc["pfc_enabled"] == [3]
    assert (pfc["pfc_cap"], pfc["delay"]) == (8, 0)
    assert pfc["requests"]["3"] == 1843 and pfc["indications"]["3"] == 97
    assert pfc["requests"]["0"] == 0


def test_pfc_without_stats_and_variants():
    plain = parse("dcb_pfc", '{"pfc_cap":8,"macsec_bypass":false,"delay":0,"prio_pfc":[true,false,false,true,false,false,false,false]}')
    assert plain["pfc_enabled"] == [0, 3]
    assert plain["requests"] is None and plain["indications"] is None
    assert parse("dcb_pfc", '{"prio_pfc": {"0": false, "3": true}}')["pfc_enabled"] == [3]
    assert parse("dcb_pfc", '{"prio_pfc": ["0:off", "3:on"]}')["pfc_enabled"] == [3]
    assert parse("dcb_pfc", '{"prio_pfc": [false, false, false, false, false, false, false, false]}')["pfc_enabled"] == []


def test_app_dscp(fixture_text):
    app = parse("dcb_app", fixture_text("dcb-j-app-show-dscp.txt"))
    assert app == {"dscp2prio": {"24": 3, "26": 3, "48": 6}, "trust": "dscp"}


def test_app_without_dscp_entries_has_no_trust():
    assert parse("dcb_app", '{"default_prio":[0]}') == {"dscp2prio": {}, "trust": None}
    assert parse("dcb_app", "{}") == {"dscp2prio": {}, "trust": None}


def test_app_dscp_names():
    assert parse("dcb_app", '{"dscp_prio": [["AF31", 3], ["CS6", "6"], ["EF", 5]]}')["dscp2prio"] == {
        "26": 3,
        "48": 6,
        "46": 5,
    }


@pytest.mark.parametrize("name", ["dcb_pfc", "dcb_app"])
@pytest.mark.parametrize("text", ["", "pfc-cap 8 macsec-bypass off delay 0", "[1, 2]", "{not json", "42"])
def test_empty_or_garbled(name, text):
    with pytest.raises(ParseError):
        parse(name, text)


def test_pfc_json_without_prio_pfc():
    with pytest.raises(ParseError):
        parse("dcb_pfc", '{"pfc_cap": 8}')
