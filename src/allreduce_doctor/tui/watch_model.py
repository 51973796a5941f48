"""Per-port counter rates for the watch screen, and the two field signatures (no Textual).

Each tick runs the counter probes through the ordinary ProbeRunner: two samples `interval`
apart on a live Host (rates per second), or the next recorded pair on a bundle. Rates of the
RDMA port (sysfs counters, hw_counters) and of its netdev (ethtool -S) are merged per port.

Signatures (the same thresholds as runbooks/roce.yaml `loss` and `pause_storm`):
- loss: retransmission / out-of-sequence / discard counters climbing (throughput collapsing
  when it has fallen below half of the port's peak seen in this watch);
- pause cascade: pause frames climbing (pause-storm events, more than PAUSE_STORM_RATE frames/s,
  or rising three samples in a row) while nothing drops.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The raw counter facts only: roce.counters would pull the job environment and QoS probes in too.
COUNTER_FACTS = {"rdma.counters", "rdma.hw_counters", "net.ethtool_stats"}
# A cue in the live table only, in frames/s: the runbooks judge pause by its share of the window
# (roce.pause_storm / roce.pause_rx, 0.15; runbooks/README.md), which the two-sample diagnosis reads.
PAUSE_STORM_RATE = 100_000
HISTORY = 60  # points kept per metric (one minute at the default interval)
NO_PORTS = "No RDMA port on this host (nothing under /sys/class/infiniband): no counters to watch."

# metric -> (column label, [(group, counter)], scale). Groups: counters (IB PMA), hw (hw_counters),
# eth (ethtool -S). Summed over the counters present; scale turns counts/s into the shown unit.
METRICS: dict[str, tuple[str, list[tuple[str, str]], float]] = {
    "throughput": ("tx Gb/s", [("eth", "tx_bytes")], 8e-9),
    "pause": ("pause/s", [("eth", f"{d}_prio{p}_pause") for p in range(8) for d in ("rx", "tx")]
              + [("eth", "rx_global_pause"), ("eth", "tx_global_pause")], 1.0),
    "pause_duration": ("pause us/s", [("eth", f"{d}_prio{p}_pause_duration") for p in range(8) for d in ("rx", "tx")], 1.0),
    "cnp": ("CNP/s", [("hw", "np_cnp_sent"), ("hw", "rp_cnp_handled")], 1.0),
    "ecn": ("ECN/s", [("hw", "np_ecn_marked_roce_packets")], 1.0),
    "out_of_sequence": ("OOS/s", [("hw", "out_of_sequence")], 1.0),
    "retrans": ("retrans/s", [("hw", "packet_seq_err"), ("hw", "local_ack_timeout_err"), ("hw", "roce_adp_retrans"),
                              ("hw", "duplicate_request"), ("hw", "implied_nak_seq_err")], 1.0),
    "discards": ("discard/s", [("eth", "rx_discards_phy"), ("eth", "tx_discards_phy"), ("eth", "rx_out_of_buffer"),
                               ("counters", "port_xmit_discards"), ("hw", "out_of_buffer")], 1.0),
    "xmit_wait": ("xmit_wait/s", [("counters", "port_xmit_wait")], 1.0),
    "symbol_errors": ("sym err/s", [("counters", "symbol_error"), ("eth", "rx_symbol_err_phy"),
                                    ("eth", "rx_crc_errors_phy")], 1.0),
}
IB_THROUGHPUT = ("counters", "port_xmit_data")  # in 4-byte words (IB PMA PortXmitData)
LOSS_METRICS = ("out_of_sequence", "retrans", "discards")
STORM_EVENTS = ("tx_pause_storm_warning_events", "tx_pause_storm_error_events")


@dataclass
class PortRates:
    """One port's rates over one interval: metric -> value (None: not counted on this port)."""

    port: str  # mlx5_0/1
    netdev: str
    link_layer: str
    rates: dict[str, float | None]
    pause_by_prio: dict[str, tuple[float, float]] = field(default_factory=dict)  # prio -> (rx/s, tx/s)
    storm_events: float = 0.0
    saturated: list[str] = field(default_factory=list)


SIGNATURE_LABELS = {"loss": "LOSS", "pause_cascade": "PAUSE CASCADE"}


@dataclass
class Signature:
    kind: str  # loss | pause_cascade
    port: str
    where: str  # the netdev (or the port)
    detail: str

    @property
    def text(self) -> str:
        return f"{SIGNATURE_LABELS[self.kind]} on {self.where}: {self.detail}"


def _by_name(records) -> dict[Any, dict]:
    """Records by their "name" as the record holds it (a port or netdev name; None if it has none)."""
    return {r.get("name"): r for r in records or [] if isinstance(r, dict)}


def _sum(rates: dict | None, names: list[str]) -> float | None:
    """The sum of the rates present; None when no counter is there (or one is unknown)."""
    if not isinstance(rates, dict):
        return None
    present = [rates[n] for n in names if n in rates]
    if not present or any(v is None for v in present):
        return None
    return float(sum(present))


def port_rates(observations) -> tuple[list[PortRates], float | None]:
    """Merge the counter facts per RDMA port; also the interval they cover (seconds)."""
    def records(fact: str) -> list:
        obs = observations.get(fact)
        return obs.value if obs.status == "ok" and isinstance(obs.value, list) else []

    counters, hw, eth = _by_name(records("rdma.counters")), _by_name(records("rdma.hw_counters")), _by_name(records("net.ethtool_stats"))
    interval = None
    out = []
    for name in sorted(set(counters) | set(hw)):
        base = counters.get(name) or hw.get(name) or {}
        netdev = base.get("netdev") or ""
        groups = {"counters": (counters.get(name) or {}).get("rate"), "hw": (hw.get(name) or {}).get("rate"),
                  "eth": (eth.get(netdev) or {}).get("rate")}
        interval = interval or base.get("interval")
        values = {}
        for metric, (_label, sources, scale) in METRICS.items():
            by_group: dict[str, list[str]] = {}
            for group, counter in sources:
                by_group.setdefault(group, []).append(counter)
            parts = [_sum(groups[g], names) for g, names in by_group.items()]
            known = [p for p in parts if p is not None]
            values[metric] = sum(known) * scale if known else None
        if values["throughput"] is None and (ib := _sum(groups["counters"], [IB_THROUGHPUT[1]])) is not None:
            values["throughput"] = ib * 4 * 8e-9
        eth_rates = groups["eth"] if isinstance(groups["eth"], dict) else {}
        prio = {str(p): (eth_rates.get(f"rx_prio{p}_pause") or 0.0, eth_rates.get(f"tx_prio{p}_pause") or 0.0)
                for p in range(8)}
        saturated = [s for g in (counters, hw) for s in (g.get(name) or {}).get("saturated") or []]
        out.append(PortRates(name, netdev, base.get("link_layer") or "", values,
                             {p: v for p, v in prio.items() if v[0] or v[1]},
                             _sum(eth_rates, list(STORM_EVENTS)) or 0.0, saturated))
    return out, interval


class Watch:
    """History per port and metric, fed one interval at a time."""

    def __init__(self) -> None:
        self.history: dict[str, dict[str, list[float]]] = {}
        self.latest: dict[str, PortRates] = {}
        self.intervals = 0

    def add(self, ports: list[PortRates]) -> None:
        self.intervals += 1
        for p in ports:
            self.latest[p.port] = p
            series = self.history.setdefault(p.port, {m: [] for m in METRICS})
            for metric, value in p.rates.items():
                series[metric].append(value if value is not None else 0.0)
                del series[metric][:-HISTORY]

    def ports(self) -> list[PortRates]:
        return [self.latest[k] for k in sorted(self.latest)]

    def signatures(self) -> list[Signature]:
        found = []
        for p in self.ports():
            r = p.rates
            loss = {m: r[m] for m in LOSS_METRICS if r.get(m)}
            if loss:
                what = ", ".join(f"{METRICS[m][0].removesuffix('/s')} {fmt_rate(v)}/s" for m, v in loss.items())
                detail = f"retransmission counters climbing ({what})"
                peak = max(self.history[p.port]["throughput"] or [0.0])
                now = r.get("throughput")
                if now is not None and peak > 0 and now < peak / 2:
                    detail += f"; throughput collapsing ({now:.1f} of {peak:.1f} Gb/s peak)"
                found.append(Signature("loss", p.port, p.netdev or p.port, detail))
                continue
            pause = r.get("pause") or 0.0
            series = self.history[p.port]["pause"]
            rising = len(series) >= 3 and series[-3] < series[-2] < series[-1]
            if pause and (p.storm_events or pause > PAUSE_STORM_RATE or rising):
                why = ("pause-storm events" if p.storm_events else "rising" if rising and pause <= PAUSE_STORM_RATE
                       else f"above {PAUSE_STORM_RATE:,}/s")
                found.append(Signature("pause_cascade", p.port, p.netdev or p.port,
                                       f"{fmt_rate(pause)} pause frames/s ({why}) while nothing drops"))
        return found

    def banner(self) -> list[Signature]:
        """One line per signature kind: the first port's, naming how many more show it."""
        lines = []
        for kind in SIGNATURE_LABELS:
            same = [s for s in self.signatures() if s.kind == kind]
            if same:
                more = f" (+{len(same) - 1} more port{'s' if len(same) > 2 else ''})" if len(same) > 1 else ""
                lines.append(Signature(kind, same[0].port, same[0].where + more, same[0].detail))
        return lines


class CounterSource:
    """One interval of counter rates per tick: live (waits `interval`) or the next recorded pair."""

    def __init__(self, catalogue, host, interval: float) -> None:
        from allreduce_doctor.probes.runner import ProbeRunner

        self.host = host
        self.runner = ProbeRunner(catalogue, host, interval)
        samples = (getattr(host, "manifest", None) or {}).get("samples") if host.kind == "snapshot" else None
        self.recorded = max(len(samples) - 1, 0) if samples is not None else None  # intervals in a bundle
        self.done = 0

    @property
    def exhausted(self) -> bool:
        return self.recorded is not None and self.done >= self.recorded

    def tick(self) -> tuple[list[PortRates], float | None]:
        observations = self.runner.run(set(COUNTER_FACTS))
        self.done += 1
        return port_rates(observations)


RATE_WIDTH = 6  # the longest fmt_rate text: "999.9k"; a table column narrower than this cuts a suffix off


def fmt_rate(value: float | None) -> str:
    """Compact rate: '-' when not counted, 0, 12, 4.2k, 1.3M."""
    if value is None:
        return "-"
    if value == 0:
        return "0"
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.1f}{suffix}"
    return f"{value:.0f}" if abs(value) >= 10 or value == int(value) else f"{value:.1f}"


def render_text(watch: Watch, header: str) -> str:
    """The latest interval as a plain table (watch on a pipe, and for tests)."""
    cols = list(METRICS)
    lines = [header, ""]
    lines.append(f"{'PORT':<10} {'NETDEV':<12} " + " ".join(f"{METRICS[c][0]:>11}" for c in cols))
    for p in watch.ports():
        lines.append(f"{p.port:<10} {p.netdev:<12} " + " ".join(f"{fmt_rate(p.rates.get(c)):>11}" for c in cols))
    lines.append("")
    if not watch.latest:
        lines.append(NO_PORTS)
    else:
        lines += [s.text for s in watch.banner()] or ["No loss or pause-cascade signature."]
    return "\n".join(lines) + "\n"
