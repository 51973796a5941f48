"""Per-port counter rates for the metrics, taken from the observations the diagnosis already has.

No counter is read again here. A counter that was not read, saturated, reset, or not sampled
(healthcheck without --interval) is absent from the metrics, never 0: an absent series says
"unknown", a 0 would say "quiet".
"""

from __future__ import annotations

import time

from allreduce_doctor.metrics.port_counters import MICROSECONDS, port_counters
from allreduce_doctor.observations import Observations

# name -> HELP text; the writer emits the families in this order. Units are in the names
# (https://prometheus.io/docs/practices/naming/). Counter meanings: docs/counters.md,
# from Linux Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst [K-mlx5en],
# drivers/infiniband/hw/mlx5/counters.c [K-mlx5ib] and Documentation/ABI/stable/sysfs-class-infiniband.
PORT_METRICS = {
    "allreduce_doctor_port_pause_seconds_per_second":
        "Seconds per second a priority was paused by PFC (rx: the peer paused this port; tx: this port "
        "paused the peer), from ethtool {rx,tx}_prio<p>_pause_duration (microseconds).",
    "allreduce_doctor_port_pause_frames_per_second":
        "PFC pause frames per second on a priority, from ethtool {rx,tx}_prio<p>_pause.",
    "allreduce_doctor_port_loss_events_per_second":
        "Loss events per second: layer rdma (out-of-sequence, sequence errors, ack timeouts, "
        "retransmissions), ethernet (NIC buffer discards), ib (port_xmit_discards).",
    "allreduce_doctor_port_cnp_per_second":
        "RoCE congestion notification packets per second (tx: np_cnp_sent, rx: rp_cnp_handled).",
    "allreduce_doctor_port_xmit_wait_ticks_per_second":
        "IB PortXmitWait ticks per second: the port had data to send but no credits (tick length is "
        "implementation-defined: compare ports, not absolute values).",
}
DIRECTIONS = ("rx", "tx")
CNP_DIRECTION = {"np_cnp_sent": "tx", "rp_cnp_handled": "rx"}
LOSS_LAYERS = {"rdma_loss": "rdma", "eth_loss": "ethernet"}  # roce.counters' sums (probes/derive.py)


def _records(observations: Observations, fact: str) -> list[dict]:
    obs = observations.get(fact)
    if not obs.ok or not isinstance(obs.value, list):
        return []
    return [r for r in obs.value if isinstance(r, dict)]


def _rate(record: dict) -> dict:
    """Per-second rates of a sampled record ({} when the second sample failed)."""
    rate = record.get("rate")
    return rate if isinstance(rate, dict) else {}


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _sample(metric: str, labels: dict, value) -> dict | None:
    number = _number(value)
    return None if number is None else {"metric": metric, "labels": labels, "value": number}


def _pause(record: dict) -> list[dict | None]:
    rate, where = _rate(record), {"device": str(record.get("device")), "port": str(record.get("port"))}
    out = []
    for prio in range(8):
        for direction in DIRECTIONS:
            labels = {**where, "priority": str(prio), "direction": direction}
            duration = _number(rate.get(f"{direction}_prio{prio}_pause_duration"))
            out.append(_sample("allreduce_doctor_port_pause_seconds_per_second", labels,
                               None if duration is None else duration / MICROSECONDS))
            out.append(_sample("allreduce_doctor_port_pause_frames_per_second", labels,
                               rate.get(f"{direction}_prio{prio}_pause")))
    return out


def _roce_loss(row: dict) -> list[dict | None]:
    device, _, port = str(row.get("port") or "").partition("/")
    interval = _number(row.get("interval"))
    if not device or not interval:
        return []
    out = []
    for key, layer in LOSS_LAYERS.items():
        events = _number(row.get(key))
        out.append(_sample("allreduce_doctor_port_loss_events_per_second",
                           {"device": device, "port": port, "layer": layer},
                           None if events is None else events / interval))
    return out


def _cnp(record: dict) -> list[dict | None]:
    where = {"device": str(record.get("device")), "port": str(record.get("port"))}
    return [_sample("allreduce_doctor_port_cnp_per_second", {**where, "direction": direction},
                    _rate(record).get(counter)) for counter, direction in CNP_DIRECTION.items()]


def _ib(record: dict) -> list[dict | None]:
    where = {"device": str(record.get("device")), "port": str(record.get("port"))}
    rate = _rate(record)
    out = [_sample("allreduce_doctor_port_xmit_wait_ticks_per_second", where, rate.get("port_xmit_wait"))]
    if record.get("link_layer") == "InfiniBand":  # the loss the IB runbook judges (runbooks/ib.yaml discards)
        out.append(_sample("allreduce_doctor_port_loss_events_per_second", {**where, "layer": "ib"},
                           rate.get("port_xmit_discards")))
    return out


def port_rates(observations: Observations) -> list[dict]:
    """[{metric, labels, value}] for every per-port rate that was observed."""
    samples: list[dict | None] = []
    for record in _records(observations, "net.ethtool_stats"):
        samples += _pause(record)
    for row in _records(observations, "roce.counters"):
        samples += _roce_loss(row)
    for record in _records(observations, "rdma.hw_counters"):
        samples += _cnp(record)
    for record in _records(observations, "rdma.counters"):
        samples += _ib(record)
    return [s for s in samples if s is not None]


def attach_run(diagnosis: dict, observations: Observations, started: float) -> dict:
    """Add what the metrics need beyond the JSON: the port rates and counters, the run's timing.

    started: the time.monotonic() value at the start of the run."""
    diagnosis["port_rates"] = port_rates(observations)
    diagnosis["port_counters"] = port_counters(observations)
    diagnosis["run"] = {"duration_seconds": round(time.monotonic() - started, 3),
                        "finished_timestamp_seconds": round(time.time(), 3)}
    return diagnosis
