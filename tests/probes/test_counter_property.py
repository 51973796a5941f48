"""Property: no counter check can pass on a missing, saturated, one-sample or idle counter.

Any counter a check reads is spoiled (deleted from one sample, unreadable, pinned at its PMA
maximum) or the window is made idle, on top of arbitrary growth of every other counter; the
check's outcome must then be `yes` (growth seen elsewhere) or `unknown`, never `no`.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from allreduce_doctor.domain import IB_LINK_ERRORS, ROCE_TRANSPORT_LOSS
from allreduce_doctor.probes.rates import IB_SATURATING_BITS
from tests.probes.counter_inputs import (
    ETH_FIRST,
    ETH_GROWTH,
    HW_FIRST,
    HW_GROWTH,
    IB_FIRST,
    IB_GROWTH,
    PEER_FIRST,
    grown,
    ib_port,
    outcome,
    peer_port,
    roce_port,
)

IB_READS = {"ib.link_errors": IB_LINK_ERRORS, "ib.discards": ("port_xmit_discards", "port_xmit_packets"),
            "ib.xmit_wait": ("port_xmit_wait",)}
ROCE_READS = {"roce.phy_errors": ("eth", ("rx_crc_errors_phy", "rx_symbol_err_phy")),
              "roce.loss": ("hw", ROCE_TRANSPORT_LOSS), "roce.pause_storm": ("eth", ("tx_prio3_pause_duration",)),
              "roce.pause_rx": ("eth", ("rx_prio3_pause_duration",)),
              "roce.congestion": ("hw", ("np_cnp_sent", "rp_cnp_handled"))}
SPOILERS = ("gone_later", "gone_first", "unreadable", "saturated", "idle")
small = st.integers(min_value=0, max_value=3)


def spoil(first: dict, second: dict, name: str, how: str, traffic: tuple[str, ...]) -> tuple[dict, dict]:
    first, second = dict(first), dict(second)
    if how == "gone_later":
        second.pop(name, None)
    elif how == "gone_first":
        first.pop(name, None)
    elif how == "unreadable":
        second[name] = "N/A (no PMA)"
    elif how == "saturated":
        top = (1 << IB_SATURATING_BITS.get(name, 64)) - 1
        first[name] = second[name] = top
    else:  # idle: the traffic counters do not move
        for counter in traffic:
            second[counter] = first[counter]
    return first, second


@settings(max_examples=300, deadline=None)
@given(check=st.sampled_from(sorted(IB_READS)), pick=st.integers(0, 10), how=st.sampled_from(SPOILERS),
       growth=st.dictionaries(st.sampled_from(sorted(IB_FIRST)), small))
def test_no_ib_check_passes_on_a_spoiled_counter(check, pick, how, growth):
    names = IB_READS[check]
    name = names[pick % len(names)]
    if how == "saturated" and name not in IB_SATURATING_BITS:
        how = "gone_later"  # data and packet counters are 64-bit: they do not saturate
    second = grown(IB_FIRST, {**IB_GROWTH, **{k: v for k, v in growth.items() if k not in IB_GROWTH}})
    first, second = spoil(IB_FIRST, second, name, how, ("port_xmit_data", "port_rcv_data"))
    assert outcome(check, ib_port(first, second)) in ("yes", "unknown")


@settings(max_examples=300, deadline=None)
@given(check=st.sampled_from(sorted(ROCE_READS)), pick=st.integers(0, 10),
       how=st.sampled_from(("gone_later", "gone_first", "unreadable", "idle")),
       hw_growth=st.dictionaries(st.sampled_from(sorted(HW_FIRST)), small),
       eth_growth=st.dictionaries(st.sampled_from(sorted(ETH_FIRST)), small))
def test_no_roce_check_passes_on_a_spoiled_counter(check, pick, how, hw_growth, eth_growth):
    group, names = ROCE_READS[check]
    name = names[pick % len(names)]
    eth = (ETH_FIRST, grown(ETH_FIRST, {**ETH_GROWTH, **{k: v for k, v in eth_growth.items() if k not in ETH_GROWTH}}))
    hw = (HW_FIRST, grown(HW_FIRST, {**HW_GROWTH, **{k: v for k, v in hw_growth.items() if k not in HW_GROWTH}}))
    if how == "idle":
        eth = spoil(*eth, name, how, ("rx_prio3_bytes", "tx_prio3_bytes"))
    elif group == "eth":
        eth = spoil(*eth, name, how, ())
    else:
        hw = spoil(*hw, name, how, ())
    assert outcome(check, roce_port(eth, hw)) in ("yes", "unknown")


def test_the_unspoiled_inputs_pass():
    """The property above is not vacuous: the same inputs, unspoiled, give 'no' on every check."""
    assert {c: outcome(c, ib_port()) for c in IB_READS} == dict.fromkeys(IB_READS, "no")
    assert {c: outcome(c, roce_port()) for c in ROCE_READS} == dict.fromkeys(ROCE_READS, "no")


@settings(max_examples=200, deadline=None)
@given(pick=st.integers(0, 10), how=st.sampled_from(SPOILERS), growth=st.dictionaries(st.sampled_from(sorted(PEER_FIRST)), small))
def test_the_switch_side_never_passes_on_a_spoiled_counter(pick, how, growth):
    """The peer's link errors: spoiled like this host's, or this host's side of the link idle."""
    name = IB_LINK_ERRORS[pick % len(IB_LINK_ERRORS)]
    second = grown(PEER_FIRST, growth)
    if how == "idle":
        own = ib_port(IB_FIRST, dict(IB_FIRST))  # nothing moved on this host's side of the link
        assert outcome("ib.peer_errors", peer_port(PEER_FIRST, second, own)) in ("yes", "unknown")
        return
    first, second = spoil(PEER_FIRST, second, name, how, ())
    assert outcome("ib.peer_errors", peer_port(first, second)) in ("yes", "unknown")
