import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse
from allreduce_doctor.parsers.ethtool import loss_summary, pause_summary


def test_cx4_global_pause_no_pfc(fixture_text):
    stats = parse("ethtool_stats", fixture_text("ethtool-S-mlx5-cx4-global-pause-no-pfc.txt"))
    assert stats["rx_packets"] == 845320277
    assert stats["tx_pci_signal_integrity"] == 34
    assert stats["rx_prio0_bytes"] == 2202570777997
    pause = pause_summary(stats)
    # no PFC: per-priority byte counters exist, per-priority pause counters do not
    assert pause["prio"]["0"]["rx_bytes"] == 2202570777997
    assert pause["prio"]["0"]["rx_pause"] is None
    loss = loss_summary(stats)
    assert loss["rx_discards_phy"] == 0 and loss["rx_out_of_buffer"] == 0
    assert loss["tx_pci_signal_integrity"] == 34


def test_host_sending_global_pause(fixture_text):
    stats = parse("ethtool_stats", fixture_text("ethtool-S-mlx5-cx4lx-host-sending-global-pause.txt"))
    assert len(stats) == 31  # the two '# ethtool -S ...' prompt lines are not counters
    pause = pause_summary(stats)
    assert pause["global"]["tx_global_pause"] == 1266552
    assert pause["global"]["tx_global_pause_duration"] == 555665182
    assert pause["global"]["rx_global_pause"] == 0
    assert pause["storm"] == {"tx_pause_storm_warning_events": 0, "tx_pause_storm_error_events": 0}
    assert pause["prio"] == {}
    assert loss_summary(stats)["rx_prio3_discards"] == 0


def test_prio_counters_before_after_later_sample_wins(fixture_text):
    stats = parse("ethtool_stats", fixture_text("ethtool-S-mlx5-prio-counters-all-traffic-prio0.txt"))
    assert stats["rx_prio0_bytes"] == 88171136852706  # the 'After' value
    assert stats["rx_prio3_bytes"] == 0
    pause = pause_summary(stats)
    assert sorted(pause["prio"]) == [str(p) for p in range(8)]
    assert all(row["rx_pause"] is None and row["tx_pause"] is None for row in pause["prio"].values())


def test_pause_summary_with_pfc_counters():
    stats = {"rx_prio3_pause": 12, "tx_prio3_pause": 7, "rx_prio3_pause_duration": 900, "tx_pause_storm_error_events": 1}
    summary = pause_summary(stats)
    assert summary["prio"] == {
        "3": {"rx_pause": 12, "tx_pause": 7, "rx_pause_duration": 900, "tx_pause_duration": None,
              "rx_bytes": None, "tx_bytes": None}
    }
    assert summary["storm"] == {"tx_pause_storm_error_events": 1}
    assert summary["global"] == {}


def test_link_1000baset(fixture_text):
    link = parse("ethtool_link", fixture_text("ethtool-ifname-1000baseT-softroce.txt"))
    assert link == {
        "interface": "eth0",
        "speed_mbps": 1000,
        "duplex": "Full",
        "lanes": None,
        "port": "Twisted Pair",
        "auto_negotiation": True,
        "link_detected": True,
    }


def test_link_speed_unknown(fixture_text):
    link = parse("ethtool_link", fixture_text("ethtool-ifname-speed-unknown-vm.txt"))
    assert (link["speed_mbps"], link["duplex"], link["link_detected"]) == (None, None, True)
    assert link["port"] == "Other"


def test_link_lanes_fragment_last_block_wins(fixture_text):
    link = parse("ethtool_link", fixture_text("ethtool-speed-lanes-400g-fragment.txt"))
    assert (link["speed_mbps"], link["lanes"], link["auto_negotiation"]) == (100000, 4, False)
    first = fixture_text("ethtool-speed-lanes-400g-fragment.txt").split("And I do:")[0]
    assert parse("ethtool_link", first)["speed_mbps"] == 400000
    assert parse("ethtool_link", first)["lanes"] == 8


@pytest.mark.parametrize("name", ["ethtool_stats", "ethtool_link"])
@pytest.mark.parametrize("text", ["", " \n", "no stats available\n", "NIC statistics:\n"])
def test_empty_or_garbled(name, text):
    with pytest.raises(ParseError):
        parse(name, text)
