"""The link going down is a PHY error on bnxt_en and ice too (mlx5 has link_down_events_phy):
bnxt_ethtool.c bnxt_port_stats_ext_arr "link_down_events"; ice_ethtool.c "link_down_events.nic"."""

from __future__ import annotations

from tests.probes.counter_inputs import grown, outcome, roce_port
from tests.probes.test_counter_derivations import BNXT_ETH, BNXT_HW

BNXT_LOAD = {"rx_bytes_pri3": 6_000_000_000, "tx_bytes_pri3": 6_000_000_000, "rx_packets_pri3": 1_400_000}
ICE_ETH = {"rx_crc_errors.nic": 0, "link_down_events.nic": 2, "rx_priority_3_xoff.nic": 10}
ICE_HW = {"ip4InDiscards": 0, "ip6InDiscards": 0, "ip4InOctets": 10**14, "ip4OutOctets": 10**14, "cnpSent": 5, "cnpHandled": 4}
ICE_LOAD = {"ip4InOctets": 6_000_000_000, "ip4OutOctets": 6_000_000_000}


def bnxt(eth_first: dict, eth_growth: dict):
    return roce_port((eth_first, grown(eth_first, {**BNXT_LOAD, **eth_growth})), (BNXT_HW, dict(BNXT_HW)))


def test_a_bnxt_link_that_went_down_in_the_window_is_a_phy_error():
    assert outcome("roce.phy_errors", bnxt({**BNXT_ETH, "link_down_events": 3}, {"link_down_events": 1})) == "yes"


def test_a_bnxt_link_down_count_that_does_not_move_is_history():
    assert outcome("roce.phy_errors", bnxt({**BNXT_ETH, "link_down_events": 3}, {})) == "no"


def test_bnxt_firmware_without_the_counter_is_judged_on_fcs_errors():
    assert outcome("roce.phy_errors", bnxt(BNXT_ETH, {})) == "no"


def test_a_bnxt_link_down_count_lost_in_the_second_sample_is_unknown():
    first = {**BNXT_ETH, "link_down_events": 3}
    second = grown(first, BNXT_LOAD)
    del second["link_down_events"]
    assert outcome("roce.phy_errors", roce_port((first, second), (BNXT_HW, dict(BNXT_HW)))) == "unknown"


def test_an_ice_link_that_went_down_in_the_window_is_a_phy_error():
    hw = (ICE_HW, grown(ICE_HW, ICE_LOAD))
    obs = roce_port((ICE_ETH, grown(ICE_ETH, {"link_down_events.nic": 1})), hw)
    assert (obs.value[0]["driver"], obs.value[0]["phy_errors"]) == ("irdma", 1)
    assert outcome("roce.phy_errors", obs) == "yes"
    assert outcome("roce.phy_errors", roce_port((ICE_ETH, dict(ICE_ETH)), hw)) == "no"
