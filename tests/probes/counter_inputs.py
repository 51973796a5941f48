"""Builders for the counter derivations' inputs: two samples of one port, as the runner records them."""

from __future__ import annotations

from allreduce_doctor.doctor import Doctor
from allreduce_doctor.observations import Observation, Observations
from allreduce_doctor.probes import derive_counters, derive_peer, rates
from allreduce_doctor.runbook.walk import decide

# One NDR port moving ~23% of line rate in a one-second window, nothing wrong.
IB_FIRST = {"symbol_error": 0, "link_error_recovery": 0, "link_downed": 0, "port_rcv_errors": 14,
            "local_link_integrity_errors": 0, "port_xmit_discards": 0, "port_xmit_packets": 315_487_941_081,
            "port_xmit_wait": 2_489_603_687, "port_xmit_data": 230_442_669_431_839, "port_rcv_data": 230_539_874_932_483}
IB_GROWTH = {"port_xmit_packets": 2_800_000, "port_xmit_wait": 41_000, "port_xmit_data": 2_900_000_000,
             "port_rcv_data": 2_900_000_000}
# mlx5 RoCE port, PFC on priority 3, ~23% of line rate on priority 3.
ETH_FIRST = {"rx_crc_errors_phy": 0, "rx_symbol_err_phy": 0, "rx_prio3_bytes": 3_802_039_947_284_012,
             "tx_prio3_bytes": 3_796_110_238_476_331, "rx_prio3_packets": 917_114_736_201, "rx_prio3_discards": 0,
             "rx_prio3_pause_duration": 90_111_550, "tx_prio3_pause_duration": 86_650_450,
             "tx_pause_storm_error_events": 0, "rx_prio3_pause": 1_802_231, "tx_prio3_pause": 1_733_009,
             "rx_discards_phy": 0, "rx_out_of_buffer": 0, "rx_buffer_passed_thres_phy": 0}
ETH_GROWTH = {"rx_prio3_bytes": 5_800_000_000, "tx_prio3_bytes": 5_800_000_000, "rx_prio3_packets": 1_400_000,
              "rx_prio3_pause": 120, "tx_prio3_pause": 120}
HW_FIRST = {"out_of_sequence": 0, "packet_seq_err": 0, "local_ack_timeout_err": 0, "roce_adp_retrans": 3,
            "duplicate_request": 0, "implied_nak_seq_err": 0, "np_cnp_sent": 18_233, "rp_cnp_handled": 17_640}
HW_GROWTH = {"np_cnp_sent": 40, "rp_cnp_handled": 40}


def grown(first: dict, growth: dict) -> dict:
    return {name: value + growth.get(name, 0) if isinstance(value, int) else value for name, value in first.items()}


def record(name: str, group: str, first: dict, second: dict, seconds: float = 1.0) -> dict:
    return {"name": name, **rates.compare(group, first, second, seconds), "values": second, "interval": seconds}


def ib_port(first: dict | None = None, second: dict | None = None, gbps: float = 400) -> Observation:
    first = IB_FIRST if first is None else first
    second = grown(first, IB_GROWTH) if second is None else second
    port = {"name": "mlx5_0/1", "link_layer": "InfiniBand", "state": {"name": "ACTIVE"}, "rate_gbps": gbps}
    return derive_counters.ib_counters({
        "rdma.compute_ports": Observation("rdma.compute_ports", [port]),
        "rdma.counters": Observation("rdma.counters", [record("mlx5_0/1", "counters", first, second)])})


# The switch port at the other end (perfquery PortCounters): old errors in its history, nothing moving.
PEER_FIRST = {"symbol_error": 3, "link_error_recovery": 0, "link_downed": 1, "port_rcv_errors": 0,
              "local_link_integrity_errors": 0, "port_xmit_discards": 0, "port_xmit_wait": 1_838_211}
PEER_VIA = {"peer_port": 21, "peer_type": "Switch", "peer_guid": "0xfc6a1c0300e10004", "peer_lid": 16}


def peer_port(first: dict | None = None, second: dict | None = None, own: Observation | None = None) -> Observation:
    """ib.peer_counters of one port whose switch side read `first` then `second`; `own`: this
    host's ib.counters (by default a loaded window)."""
    first = PEER_FIRST if first is None else first
    second = dict(first) if second is None else second
    rec = record("mlx5_0/1", "counters", {**first, "via": PEER_VIA}, {**second, "via": PEER_VIA})
    port = {"name": "mlx5_0/1", "link_layer": "InfiniBand", "state": {"name": "ACTIVE"}, "rate_gbps": 400}
    return derive_peer.ib_peer_errors({
        "rdma.compute_ports": Observation("rdma.compute_ports", [port]),
        "rdma.peer_counters": Observation("rdma.peer_counters", [rec]),
        "ib.counters": ib_port() if own is None else own})


def roce_port(eth: tuple[dict, dict] | None = None, hw: tuple[dict, dict] | None = None,
              priority: int | None = 3, pfc_on_priority: bool | None = True) -> Observation:
    eth = eth or (ETH_FIRST, grown(ETH_FIRST, ETH_GROWTH))
    hw = hw or (HW_FIRST, grown(HW_FIRST, HW_GROWTH))
    port = {"name": "mlx5_0/1", "netdev": "eth2", "link_layer": "Ethernet", "state": {"name": "ACTIVE"}, "rate_gbps": 400}
    prio = {"name": "eth2", "priority": priority, "pfc_on_priority": pfc_on_priority}
    return derive_counters.roce_counters({
        "rdma.compute_ports": Observation("rdma.compute_ports", [port]),
        "net.ethtool_stats": Observation("net.ethtool_stats", [record("eth2", "ethtool", *eth)]),
        "rdma.hw_counters": Observation("rdma.hw_counters", [record("mlx5_0/1", "hw_counters", *hw)]),
        "roce.priority": Observation("roce.priority", [prio])})


_RUNBOOKS = []


def _decision(node: str, derived: Observation):
    """The shipped runbook check `node` decided over one derived counter fact."""
    if not _RUNBOOKS:
        _RUNBOOKS.append(Doctor.load().runbooks)
    facts = Observations()
    derived.fact = ("ib.peer_counters" if node == "ib.peer_errors" else "ib.counters" if node.startswith("ib.")
                    else "roce.counters")
    facts.add(derived)
    return decide(_RUNBOOKS[0].node(node), facts, {})


def outcome(node: str, derived: Observation) -> str:
    """yes / no / unknown."""
    return _decision(node, derived).step.outcome


def reason(node: str, derived: Observation) -> str:
    """Why the check is unknown, as the report prints it."""
    return _decision(node, derived).reason
