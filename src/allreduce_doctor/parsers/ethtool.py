"""`ethtool -S IF` counters and `ethtool IF` link settings, plus pure summaries of the
mlx5 counters that matter for RoCE (names per the kernel's mlx5 counters.rst)."""

from __future__ import annotations

import re

from allreduce_doctor.domain import ETH_DROP_AND_ERROR
from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, kv, lines, require, to_int

# ethtool -S prints each statistic as "     name: value" (ethtool.c, dump_stats); a line named
# ERROR or WARNING is a message (node_exporter's fixture of a failing ethtool is "ERROR: 1").
_MESSAGES = frozenset({"error", "warning"})


@parser("ethtool_stats")
def parse_ethtool_stats(text: str) -> dict:
    """`name: value` lines -> {name: int}; headers, prompts and prose are skipped.
    When a paste holds two samples (before/after), the later value wins."""
    what = "ethtool -S output ('name: value' counter lines)"
    require(text, what)
    stats: dict[str, int] = {}
    for line in lines(text):
        name, sep, raw = line.rpartition(":")
        name = name.strip()
        value = to_int(raw) if sep else None
        if value is not None and name and not name.startswith("#") and name.lower() not in _MESSAGES:
            stats[name] = value
    if not stats:
        raise fail(what, text)
    return stats


def _yes_no(raw: str) -> bool | None:
    word = raw.strip().lower()
    if word in ("yes", "on"):
        return True
    if word in ("no", "off"):
        return False
    return None


@parser("ethtool_link")
def parse_ethtool_link(text: str) -> dict:
    """Speed 'Unknown!' (VMs, link down) gives speed_mbps None, not an error."""
    what = "ethtool output (Settings for IF: / Speed: / Link detected:)"
    require(text, what)
    out: dict = {
        "interface": None,
        "speed_mbps": None,
        "duplex": None,
        "lanes": None,
        "port": None,
        "auto_negotiation": None,
        "link_detected": None,
    }
    found = False
    for line in lines(text):
        m = re.match(r"^\s*Settings for\s+(\S+?)\s*:\s*$", line)
        if m:
            out["interface"], found = m.group(1), True
            continue
        pair = kv(line)
        if pair is None:
            continue
        key, raw = pair
        if key == "Speed":
            m = re.match(r"([0-9]{1,9})\s*Mb/s", raw, re.ASCII)
            out["speed_mbps"], found = (int(m.group(1)) if m else None), True
        elif key == "Duplex":
            out["duplex"] = None if raw.lower().startswith("unknown") else raw
        elif key == "Lanes":
            out["lanes"] = to_int(raw)
        elif key == "Port":
            out["port"] = raw
        elif key == "Auto-negotiation":
            out["auto_negotiation"] = _yes_no(raw)
        elif key == "Link detected":
            out["link_detected"], found = _yes_no(raw), True
    if not found:
        raise fail(what, text)
    return out


def _pick(stats: dict, names: list[str]) -> dict:
    return {name: stats[name] for name in names if name in stats}


_PRIO_FIELDS = ("rx_pause", "tx_pause", "rx_pause_duration", "tx_pause_duration", "rx_bytes", "tx_bytes")
_GLOBAL = [
    "rx_global_pause", "tx_global_pause", "rx_global_pause_duration", "tx_global_pause_duration",
    "rx_global_pause_transition", "rx_pause_ctrl_phy", "tx_pause_ctrl_phy",
]
_STORM = ["tx_pause_storm_warning_events", "tx_pause_storm_error_events"]
_LOSS = list(ETH_DROP_AND_ERROR)  # the list lives with the other domain truths


def pause_summary(stats: dict) -> dict:
    """Per-priority PFC counters (only priorities with any counter), 802.3x global pause,
    and pause-storm events. A missing per-priority pause counter is None: on mlx5 the
    rx/tx_prioN_pause lines exist only while PFC is enabled on that priority."""
    prio: dict[str, dict] = {}
    for p in range(8):
        row = {}
        for field in _PRIO_FIELDS:
            direction, rest = field.split("_", 1)
            row[field] = stats.get(f"{direction}_prio{p}_{rest}")
        if any(v is not None for v in row.values()):
            prio[str(p)] = row
    return {"prio": prio, "global": _pick(stats, _GLOBAL), "storm": _pick(stats, _STORM)}


def loss_summary(stats: dict) -> dict:
    """The drop/error/PCIe-stall counters that exist in this NIC's `ethtool -S`."""
    return _pick(stats, _LOSS)
