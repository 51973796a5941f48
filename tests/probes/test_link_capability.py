"""Degraded or built for that speed, from both ends of the link (derive_linkcap), and ECN/DCQCN
from the congestion counters where no enable can be read (derive_ecn)."""

from __future__ import annotations

import pytest

from allreduce_doctor.parsers import parse
from allreduce_doctor.probes import derive_ecn, derive_linkcap
from allreduce_doctor.probes.chain import VIA
from tests.scenarios import nodes as N
from tests.scenarios.tools_link import ethtool_link, local_portinfo, peer_portinfo

SWITCH_CAPS = {"peer_capmask": 0x4250C848, "peer_capmask2": 0}  # a switch's port 0 CapMask: extended speeds


def _ends(node: N.Node, caps=SWITCH_CAPS) -> tuple[dict, dict]:
    return parse("ib_portinfo", local_portinfo(node, 0)), {**parse("ib_portinfo", peer_portinfo(node, 0)), VIA: caps}


def test_hdr_link_where_both_ends_support_ndr_could_be_ndr():
    cap = derive_linkcap.ib_link(*_ends(N.Node("ib", base_rate="200 Gb/sec (4X HDR)", peer_speeds=("HDR", "NDR"))))
    assert cap == {"short": True, "capable_gbps": 400.0, "capability":
                   "both ends support 4X NDR (400 Gb/s; PortInfo of this port and its peer): could be NDR"}


def test_hdr_link_to_an_hdr_switch_is_built_for_that_speed():
    cap = derive_linkcap.ib_link(*_ends(N.Node("ib", base_rate="200 Gb/sec (4X HDR)")))
    assert (cap["short"], cap["capable_gbps"]) == (False, 200.0)
    assert cap["capability"].endswith("built for that speed")


def test_a_narrow_width_could_be_4x():
    cap = derive_linkcap.ib_link(*_ends(N.Node("ib", rate={0: "200 Gb/sec (2X NDR)"})))
    assert cap["short"] is True and cap["capability"].endswith("could be 4X")


def test_without_extended_speeds_in_the_switch_capmask_the_classic_speeds_decide():
    """get_max_msg goes to LinkSpeedSupported when either CapMask lacks IsExtendedSpeedsSupported:
    both ends at QDR 10 Gb/s per lane, the port 'Extended speed' active is not QDR: could be QDR."""
    cap = derive_linkcap.ib_link(*_ends(N.Node("ib"), {"peer_capmask": 0x0848, "peer_capmask2": 0}))
    assert (cap["short"], cap["capable_gbps"]) == (True, 40.0)


def test_an_end_not_read_is_unknown():
    local, _ = _ends(N.Node("ib"))
    assert derive_linkcap.ib_link(local, None)["short"] is None


def _eth(**changes) -> dict:
    node = N.Node("roce", **changes)
    return parse("ethtool_modes", ethtool_link(node, "enp26s0np0"))


@pytest.mark.parametrize("changes, gbps, short, capable", [
    ({"eth_partner": (400000, 200000)}, 200, True, 400.0),  # both ends advertise 400G
    ({"eth_partner": (200000, 100000)}, 200, False, 200.0),  # the partner tops out at 200G
    ({"eth_supported": (200000, 100000)}, 200, False, 200.0),  # no partner modes: at its own top
    ({}, 200, None, None),  # no partner modes, below its own top: unknown
])
def test_roce_link_from_advertised_and_partner_modes(changes, gbps, short, capable):
    cap = derive_linkcap.eth_link(_eth(**changes), gbps)
    assert (cap["short"], cap["capable_gbps"]) == (short, capable)


def test_below_capability_keeps_a_declared_rate_and_labels_the_table_fallback():
    port = {"rate_gbps": 200.0, "declared_gbps": None, "link_short": None, "rated_gbps": 400}
    assert derive_linkcap.below_capability(port) is None  # only the PCI-id table says 400: unknown
    assert derive_linkcap.below_capability(dict(port, declared_gbps=200)) is False
    assert derive_linkcap.below_capability(dict(port, link_short=True)) is True
    assert derive_linkcap.below_capability(dict(port, link_short=True, declared_gbps=200)) is False


def _hw(**delta) -> dict:
    base = {"np_ecn_marked_roce_packets": 0, "np_cnp_sent": 0, "rp_cnp_handled": 0, "rp_cnp_ignored": 0,
            "out_of_sequence": 0, "rx_write_requests": 100}
    return {"delta": {**base, **delta}}


@pytest.mark.parametrize("delta, on, words", [
    ({"np_ecn_marked_roce_packets": 900}, False, "np_ecn_marked_roce_packets grew by 900 and np_cnp_sent stayed flat"),
    ({"rp_cnp_ignored": 52, "rp_cnp_handled": 0}, False, "rp_cnp_ignored grew by 52"),
    ({"np_ecn_marked_roce_packets": 40, "np_cnp_sent": 40, "rp_cnp_handled": 40}, True, "answered by np_cnp_sent"),
    ({}, None, "no ECN mark and no CNP moved in the window"),
    ({"np_ecn_marked_roce_packets": 40, "np_cnp_sent": 40}, None, "only one side"),
])
def test_ecn_from_the_congestion_counters(delta, on, words):
    got, why = derive_ecn.from_counters(_hw(**delta))
    assert got is on and words in why


def test_ecn_counters_not_sampled_are_unknown():
    assert derive_ecn.from_counters(None) == (None, "the congestion counters were not sampled twice")


def _reason(name: str, node: str) -> str:
    from tests.scenarios.expected import diagnose

    return next(r["reason"] for r in diagnose(name)["inconclusive"] if r["node"] == node)


def test_a_rate_below_only_the_pci_id_table_says_what_was_read_and_labels_the_table():
    assert _reason("ib-below-rating-caps-unread", "trunk.link_rate").endswith(
        "; link rate of mlx5_0/1, mlx5_1/1, mlx5_2/1 and more is unknown: 200 Gb/s, below the PCI-id table's rating "
        "of MT4129 (last resort: one model is sold at several rates) (400 Gb/s); rdma.local_portinfo is missing: "
        "smpquery is not installed (not on PATH); declare link_gbps in site.toml to decide")


def test_no_ecn_sysfs_and_no_marks_moving_says_both():
    assert _reason("roce-no-ecn-sysfs-idle", "roce.ecn").endswith(
        "; the congestion counters: no ECN mark and no CNP moved in the window (np_ecn_marked_roce_packets, rp_cnp_handled)")
