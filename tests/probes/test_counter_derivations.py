"""The counter derivations: missing, saturated, one-sample and idle counters are unknown with
the reason and the command that clears it; names per driver; each threshold at its edge."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from allreduce_doctor.probes import counter_names, rates
from tests.probes.counter_inputs import (
    ETH_FIRST,
    ETH_GROWTH,
    HW_FIRST,
    HW_GROWTH,
    IB_FIRST,
    IB_GROWTH,
    grown,
    ib_port,
    outcome,
    reason,
    roce_port,
)

ROOT = Path(__file__).resolve().parents[2]
IDLE = "the window was idle (0.00% of line rate): re-run under load with `--interval 10` (mlx5_0/1)"


def test_compare_names_counters_missing_from_one_sample_or_unreadable():
    out = rates.compare("counters", {"a": 1, "b": 2, "c": "N/A (no PMA)"}, {"a": 3, "c": 4, "d": 5}, 1.0)
    assert out == {"delta": {"a": 2}, "rate": {"a": 2.0}, "saturated": [], "absent": ["b", "c", "d"]}


def test_pinned_xmit_wait_is_unknown_with_perfquery():
    pinned = dict(IB_FIRST, port_xmit_wait=4_294_967_295)
    obs = ib_port(pinned, dict(grown(IB_FIRST, IB_GROWTH), port_xmit_wait=4_294_967_295))
    row = obs.value[0]
    assert (row["xmit_wait_fraction"], row["link_errors"], row["discards_ppm"]) == (None, 0, 0.0)
    assert obs.reason == ("port_xmit_wait is pinned at its maximum (4294967295): clear the port counters with "
                          "`perfquery -R` (root) and re-measure (mlx5_0/1)")
    assert outcome("ib.xmit_wait", obs) == "unknown"
    assert reason("ib.xmit_wait", obs) == f"ib.counters: {obs.reason}"


def test_a_counter_gone_from_the_second_sample_is_unknown_not_zero():
    second = grown(IB_FIRST, dict(IB_GROWTH, port_xmit_wait=1_200_000_000))
    del second["port_xmit_wait"]
    obs = ib_port(IB_FIRST, second)
    assert obs.value[0]["xmit_wait_fraction"] is None
    assert obs.reason == "port_xmit_wait is missing from one sample or unreadable (mlx5_0/1)"
    assert outcome("ib.xmit_wait", obs) == "unknown"


def test_idle_ib_window_is_unknown_but_errors_still_count():
    idle = ib_port(IB_FIRST, grown(IB_FIRST, {"port_xmit_data": 1000}))
    assert [idle.value[0][k] for k in ("load", "idle", "loaded", "link_errors", "xmit_wait_fraction")] == \
        [0.0, True, None, None, None]
    assert idle.reason == IDLE
    assert [outcome(n, idle) for n in ("ib.loaded", "ib.link_errors", "ib.discards", "ib.xmit_wait")] == ["unknown"] * 4
    erroring = ib_port(IB_FIRST, grown(IB_FIRST, {"symbol_error": 47}))
    assert erroring.value[0]["link_errors"] == 47 and outcome("ib.link_errors", erroring) == "yes"


def test_a_saturated_error_counter_does_not_hide_growth_of_another():
    first = dict(IB_FIRST, link_downed=255)
    obs = ib_port(first, grown(first, dict(IB_GROWTH, symbol_error=30)))
    assert obs.value[0]["link_errors"] == 30 and outcome("ib.link_errors", obs) == "yes"
    quiet = ib_port(first, grown(first, IB_GROWTH))
    assert quiet.value[0]["link_errors"] is None and outcome("ib.link_errors", quiet) == "unknown"


@pytest.mark.parametrize("ticks, expected", [(937_500_000, "no"), (937_600_000, "yes")])
def test_xmit_wait_threshold_is_15_percent_of_link_time(ticks, expected):
    # 400 Gb/s for one second = 6.25e9 ticks of 64 bits; 15% = 937,500,000 ticks
    obs = ib_port(IB_FIRST, grown(IB_FIRST, dict(IB_GROWTH, port_xmit_wait=ticks)))
    assert outcome("ib.xmit_wait", obs) == expected


@pytest.mark.parametrize("discards, expected", [(2, "no"), (3, "yes")])
def test_ib_discards_threshold_is_one_per_million_packets(discards, expected):
    # 2.8 M packets sent: 2 discards = 0.714 ppm, 3 = 1.071 ppm
    obs = ib_port(IB_FIRST, grown(IB_FIRST, dict(IB_GROWTH, port_xmit_discards=discards)))
    assert outcome("ib.discards", obs) == expected


@pytest.mark.parametrize("words, loaded", [(124_990_000, "unknown"), (125_000_000, "yes")])
def test_idle_threshold_is_one_percent_of_line_rate(words, loaded):
    # 1% of 400 Gb/s for one second = 4e9 bits = 5e8 bytes = 1.25e8 words, both directions counted
    obs = ib_port(IB_FIRST, grown(IB_FIRST, {"port_xmit_data": words // 2, "port_rcv_data": words // 2,
                                             "port_xmit_packets": 1_000_000}))
    assert outcome("ib.loaded", obs) == loaded


def test_roce_loaded_healthy_is_not_loss():
    eth = (ETH_FIRST, grown(ETH_FIRST, dict(ETH_GROWTH, rx_buffer_passed_thres_phy=3, rx_out_of_buffer=120)))
    obs = roce_port(eth)
    assert [outcome(n, obs) for n in ("roce.loaded", "roce.phy_errors", "roce.loss", "roce.pause_storm",
                                      "roce.pause_rx", "roce.congestion")] == ["yes", "no", "no", "no", "no", "no"]
    assert obs.reason == ""


@pytest.mark.parametrize("direction, node", [("rx", "roce.pause_rx"), ("tx", "roce.pause_storm")])
@pytest.mark.parametrize("micros, expected", [(150_000, "no"), (150_100, "yes")])
def test_pause_threshold_is_15_percent_of_the_window_per_direction(direction, node, micros, expected):
    eth = (ETH_FIRST, grown(ETH_FIRST, {**ETH_GROWTH, f"{direction}_prio3_pause_duration": micros}))
    obs = roce_port(eth)
    other = "roce.pause_storm" if node == "roce.pause_rx" else "roce.pause_rx"
    assert (outcome(node, obs), outcome(other, obs)) == (expected, "no")


@pytest.mark.parametrize("discards, expected", [(1, "no"), (2, "yes")])
def test_roce_discards_threshold_is_one_per_million_on_the_priority(discards, expected):
    # 1.4 M packets received on priority 3: 1 discard = 0.714 ppm, 2 = 1.429 ppm
    obs = roce_port((ETH_FIRST, grown(ETH_FIRST, dict(ETH_GROWTH, rx_prio3_discards=discards))))
    assert outcome("roce.loss", obs) == expected


@pytest.mark.parametrize("cnps, expected", [(10_000, "no"), (10_001, "yes")])
def test_cnp_threshold_is_per_direction(cnps, expected):
    obs = roce_port(hw=(HW_FIRST, grown(HW_FIRST, {"np_cnp_sent": cnps, "rp_cnp_handled": 40})))
    assert outcome("roce.congestion", obs) == expected


def test_any_transport_loss_under_load_is_loss():
    obs = roce_port(hw=(HW_FIRST, grown(HW_FIRST, dict(HW_GROWTH, local_ack_timeout_err=1))))
    assert obs.value[0]["rdma_loss"] == 1 and outcome("roce.loss", obs) == "yes"


def test_pause_storm_error_event_is_a_storm_and_the_warning_is_not():
    warned = roce_port((ETH_FIRST, grown({**ETH_FIRST, "tx_pause_storm_warning_events": 0},
                                         {**ETH_GROWTH, "tx_pause_storm_warning_events": 2})))
    assert outcome("roce.pause_storm", warned) == "no"
    fired = roce_port((ETH_FIRST, grown(ETH_FIRST, {**ETH_GROWTH, "tx_pause_storm_error_events": 1})))
    assert outcome("roce.pause_storm", fired) == "yes"


def test_no_pfc_on_the_priority_means_no_pause_there():
    eth = {k: v for k, v in ETH_FIRST.items() if "pause" not in k}
    obs = roce_port((eth, grown(eth, ETH_GROWTH)), pfc_on_priority=False)
    assert (obs.value[0]["pause_rx_fraction"], obs.value[0]["pause_tx_fraction"]) == (0.0, 0.0)


def test_unknown_priority_judges_transport_loss_but_not_pause():
    eth = dict(ETH_FIRST, rx_vport_rdma_unicast_bytes=0, tx_vport_rdma_unicast_bytes=0)
    obs = roce_port((eth, grown(eth, {"rx_vport_rdma_unicast_bytes": 6_000_000_000, "tx_vport_rdma_unicast_bytes": 6_000_000_000})),
                    priority=None)
    row = obs.value[0]
    assert (row["loaded"], row["rdma_loss"], row["pause_rx_fraction"]) == (True, 0, None)
    assert row["lacks"] == ["prio_discards", "pcie_stall"]  # which priority's drops to read is unknown; no PCIe counters
    assert (outcome("roce.loss", obs), outcome("roce.pause_rx", obs)) == ("no", "unknown")
    assert ("NCCL's priority is unknown (NCCL_IB_TC, trust mode or the DSCP map could not be read) (eth2)"
            in obs.reason)


BNXT_ETH = {"rx_bytes_pri3": 10**15, "tx_bytes_pri3": 10**15, "rx_packets_pri3": 10**12,
            "pfc_pri3_rx_duration_us": 5_000, "pfc_pri3_tx_duration_us": 4_000, "rx_fcs_err_frames": 0}
BNXT_HW = {"to_retransmits": 0, "seq_err_naks_rcvd": 0, "dup_req": 0, "oos_drop_count": 0, "rx_pkts": 10**12,
           "tx_cnp_pkts": 100, "rx_cnp_pkts": 90}


def test_bnxt_counters_are_read_by_their_own_names():
    eth = (BNXT_ETH, grown(BNXT_ETH, {"rx_bytes_pri3": 6_000_000_000, "tx_bytes_pri3": 6_000_000_000,
                                      "rx_packets_pri3": 1_400_000, "pfc_pri3_tx_duration_us": 380_000}))
    hw = (BNXT_HW, grown(BNXT_HW, {"to_retransmits": 4_812, "seq_err_naks_rcvd": 311}))
    row = roce_port(eth, hw).value[0]
    assert (row["driver"], row["lacks"], row["rdma_loss"], row["pause_tx_fraction"], row["pause_rx_fraction"]) == \
        ("bnxt_re", ["prio_discards", "storm", "pcie_stall"], 5_123, 0.38, 0.0)
    assert outcome("roce.loss", roce_port(eth, hw)) == "yes"
    assert outcome("roce.pause_storm", roce_port(eth, hw)) == "yes"


def test_a_nic_with_no_known_counter_name_is_unknown_not_healthy():
    eth = ({"vendor_rx_bytes": 1}, {"vendor_rx_bytes": 10**10})
    hw = ({"vendor_errors": 0}, {"vendor_errors": 0})
    obs = roce_port(eth, hw)
    assert obs.value[0]["driver"] is None
    assert obs.reason == ("none of the counters of a known driver (mlx5, bnxt_re/bnxt_en, irdma/ice) is present: "
                          "cannot judge this NIC (eth2)")
    assert {n: outcome(n, obs) for n in ("roce.loaded", "roce.phy_errors", "roce.loss", "roce.pause_storm",
                                         "roce.pause_rx", "roce.congestion")} == dict.fromkeys(
        ("roce.loaded", "roce.phy_errors", "roce.loss", "roce.pause_storm", "roce.pause_rx", "roce.congestion"), "unknown")


def test_driver_map_keeps_domain_lists_as_the_mlx5_row():
    from allreduce_doctor.domain import ETH_PHY_ERRORS, ETH_PORT_LOSS, ROCE_TRANSPORT_LOSS
    mlx5 = counter_names.DRIVERS["mlx5"]
    assert mlx5["loss"] == tuple(f"hw:{n}" for n in ROCE_TRANSPORT_LOSS)
    assert mlx5["phy_errors"] == tuple(f"eth:{n}" for n in ETH_PHY_ERRORS)
    assert mlx5["port_discards"] == tuple(f"eth:{n}" for n in ETH_PORT_LOSS)
    assert counter_names.driver_of(["to_retransmits", "rx_pkts"], ["pfc_pri3_rx_duration_us"]) == "bnxt_re"
    assert counter_names.driver_of(["cnpSent", "ip4InOctets"], ["rx_crc_errors.nic"]) == "irdma"
    assert counter_names.driver_of([], []) is None


def test_threshold_table_matches_the_runbook_checks():
    """runbooks/README.md: every threshold row names a check whose condition holds that number."""
    table = (ROOT / "runbooks" / "README.md").read_text().split("## Thresholds", 1)[1]
    rows = [line.split("|")[1:-1] for line in table.splitlines() if line.startswith("| `")]
    checks = {}
    for name in ("ib", "roce"):
        text = (ROOT / "runbooks" / f"{name}.yaml").read_text()
        for node, body in re.findall(r"\n  (\w+):\n((?:    .*\n)+)", text):
            checks[f"{name}.{node}"] = body
    assert len(rows) >= 8
    for node, _what, threshold, _unit, _source in rows:
        node, number = node.strip().strip("`"), threshold.strip().strip("`")
        if node.startswith("derive_counters."):
            from allreduce_doctor.probes import derive_counters
            assert str(getattr(derive_counters, node.split(".")[1])) == number, node
        else:
            assert f"> {number}" in checks[node].split("check:", 1)[1].split("expected:", 1)[0], node


def test_fleet_numbers_leave_a_saturated_or_one_sample_counter_out_not_zero():
    from allreduce_doctor.fleet.node_settings import node_record
    from allreduce_doctor.observations import Observation, Observations
    from tests.probes.counter_inputs import record

    def numbers(first, second):
        obs = Observations()
        obs.add(Observation("rdma.counters", [record("mlx5_0/1", "counters", first, second)]))
        return node_record(obs, None)["numbers"]

    assert numbers(IB_FIRST, grown(IB_FIRST, IB_GROWTH))["xmit_wait_rate"] == 41_000.0
    pinned = dict(IB_FIRST, port_xmit_wait=4_294_967_295)
    assert "xmit_wait_rate" not in numbers(pinned, pinned)
    second = grown(IB_FIRST, {"symbol_error": 5})
    del second["link_downed"]
    assert "ib_error_rate" not in numbers(IB_FIRST, second)
