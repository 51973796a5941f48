"""The raw port counters, as Prometheus counters (`*_total`), beside the 1-second rates.

node_exporter's convention: a counter is exported as the device's own running count, named
`..._total` with `# TYPE ... counter`, and PromQL takes the rate over any window (`rate()`,
which also handles a counter reset); https://prometheus.io/docs/practices/naming/ ("an
accumulating count has total as a suffix", base units: seconds) and
https://prometheus.io/docs/concepts/metric_types/#counter; node_exporter v1.12.1 exports
InfiniBand's the same way (collector/infiniband_linux.go, "port_transmit_wait_total"). The
counters are the last sample the diagnosis read; the counter names per driver are
probes/counter_names.py's (mlx5, bnxt_re, irdma). A counter that was not read, was
missing from one sample or is pinned at its maximum (a saturating IB PMA counter no longer
counts: rate() would read 0, "quiet") is absent, never 0.
"""

from __future__ import annotations

from allreduce_doctor.observations import Observations
from allreduce_doctor.probes.counter_names import PRIORITIES, driver_of, names

MICROSECONDS = 1e6  # ethtool's pause durations are microseconds
# name -> HELP; the families in this order.
COUNTER_METRICS = {
    "allreduce_doctor_port_pause_frames_total":
        "PFC pause frames on a priority (rx: received from the peer; tx: sent to it), ethtool -S.",
    "allreduce_doctor_port_pause_duration_seconds_total":
        "Seconds a priority was paused by PFC (rx: the peer paused this port; tx: this port paused the peer), "
        "from ethtool -S pause duration (microseconds).",
    "allreduce_doctor_port_cnp_total":
        "RoCE congestion notification packets (tx: sent as notification point; rx: handled as reaction point).",
    "allreduce_doctor_port_rdma_loss_total":
        "RDMA transport loss events by counter (retransmissions, sequence errors, ack timeouts), hw_counters.",
    "allreduce_doctor_port_discards_total":
        "Packets the Ethernet port dropped for lack of buffer, by counter (ethtool -S).",
    "allreduce_doctor_port_xmit_wait_ticks_total":
        "IB PortXmitWait ticks: the port had data to send but no credits (sysfs counters/port_xmit_wait).",
    "allreduce_doctor_port_xmit_discards_total":
        "IB outbound packets discarded by the port (sysfs counters/port_xmit_discards).",
}
DIRECTED = {  # role -> (metric, direction, divisor to the base unit)
    "pause_rx_frames": ("allreduce_doctor_port_pause_frames_total", "rx", 1.0),
    "pause_tx_frames": ("allreduce_doctor_port_pause_frames_total", "tx", 1.0),
    "pause_rx_us": ("allreduce_doctor_port_pause_duration_seconds_total", "rx", MICROSECONDS),
    "pause_tx_us": ("allreduce_doctor_port_pause_duration_seconds_total", "tx", MICROSECONDS),
}
CNP = {"cnp_sent": "tx", "cnp_handled": "rx"}
BY_COUNTER = {"loss": "allreduce_doctor_port_rdma_loss_total", "port_discards": "allreduce_doctor_port_discards_total"}
IB = {"port_xmit_wait": "allreduce_doctor_port_xmit_wait_ticks_total",
      "port_xmit_discards": "allreduce_doctor_port_xmit_discards_total"}


def _usable(record: dict) -> dict[str, float]:
    """The record's counters that may be exported: numbers, not absent, not saturated."""
    values = record.get("values")
    if not isinstance(values, dict):
        return {}
    skip = set(record.get("absent") or ()) | set(record.get("saturated") or ())
    return {k: float(v) for k, v in values.items()
            if k not in skip and isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0}


def _by_port(observations: Observations, fact: str) -> dict[tuple[str, str], dict[str, float]]:
    obs = observations.get(fact)
    if not obs.ok or not isinstance(obs.value, list):
        return {}
    return {(str(r["device"]), str(r.get("port"))): _usable(r) for r in obs.value
            if isinstance(r, dict) and r.get("device") is not None}


def _roce(where: dict, hw: dict[str, float], eth: dict[str, float]) -> list[dict]:
    driver = driver_of(hw, eth)
    if driver is None:
        return []
    groups = {"hw": hw, "eth": eth}
    out = []
    for role, (metric, direction, divisor) in DIRECTED.items():
        shared = set(names(driver, role, None))  # global pause: no priority, not exported here
        for prio in PRIORITIES:
            for group, name in names(driver, role, prio):
                if (group, name) not in shared and name in groups[group]:
                    out.append({"metric": metric, "value": groups[group][name] / divisor,
                                "labels": {**where, "priority": str(prio), "direction": direction}})
    for role, direction in CNP.items():  # bnxt_re: two names across kernels, the first present
        present = [(g, n) for g, n in names(driver, role, None) if n in groups[g]]
        out += [{"metric": "allreduce_doctor_port_cnp_total", "value": groups[g][n],
                 "labels": {**where, "direction": direction}} for g, n in present[:1]]
    for role, metric in BY_COUNTER.items():
        out += [{"metric": metric, "value": groups[g][n], "labels": {**where, "counter": n}}
                for g, n in names(driver, role, None) if n in groups[g]]
    return out


def port_counters(observations: Observations) -> list[dict]:
    """[{metric, labels, value}] for every raw port counter that was read and still counts."""
    eth = _by_port(observations, "net.ethtool_stats")
    hw = _by_port(observations, "rdma.hw_counters")
    out: list[dict] = []
    for key in sorted(set(eth) | set(hw)):
        out += _roce({"device": key[0], "port": key[1]}, hw.get(key, {}), eth.get(key, {}))
    for (device, port), values in sorted(_by_port(observations, "rdma.counters").items()):
        out += [{"metric": metric, "value": values[name], "labels": {"device": device, "port": port}}
                for name, metric in IB.items() if name in values]
    return out
