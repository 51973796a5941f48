"""Counter deltas and rates between two samples, with each counter's width respected.

- mlx5 hw_counters are 32-bit Q-counters and wrap at 2^32; the congestion group
  (rp_cnp_*, np_*) and rx_icrc_encapsulated are 64-bit.
- IB PMA error counters saturate at their field width (4, 8, 16 or 32 bits): a counter
  sitting at its maximum has an unknown delta ("saturated: reset and re-measure").
- ethtool -S counters are 64-bit.
"""

from __future__ import annotations

from allreduce_doctor.probes.chain import VIA

# Saturating IB PortCounters widths (docs/counters.md section 0, rule 2; Linux drivers/infiniband/core/sysfs.c).
IB_SATURATING_BITS = {
    "symbol_error": 16,
    "link_error_recovery": 8,
    "link_downed": 8,
    "port_rcv_errors": 16,
    "port_rcv_remote_physical_errors": 16,
    "port_rcv_switch_relay_errors": 16,
    "port_xmit_discards": 16,
    "port_xmit_constraint_errors": 8,
    "port_rcv_constraint_errors": 8,
    "local_link_integrity_errors": 4,
    "excessive_buffer_overrun_errors": 4,
    "VL15_dropped": 16,
    "port_xmit_wait": 32,
}
WIDE_HW_COUNTERS = ("rp_cnp_", "np_", "rx_icrc_encapsulated")


def counter_mode(group: str, name: str) -> tuple[str, int]:
    """('saturate'|'wrap', bits) for a counter of a group ('counters', 'hw_counters', 'ethtool')."""
    if group == "counters" and name in IB_SATURATING_BITS:
        return "saturate", IB_SATURATING_BITS[name]
    if group == "hw_counters" and not name.startswith(WIDE_HW_COUNTERS):
        return "wrap", 32
    return "wrap", 64


def delta(group: str, name: str, before: int, after: int) -> int | None:
    """after - before, or None when it cannot be known (saturated counter, or a reset)."""
    return _delta(*counter_mode(group, name), before, after)


def _delta(mode: str, bits: int, before: int, after: int) -> int | None:
    top = (1 << bits) - 1
    if mode == "saturate":
        if before >= top or after >= top:
            return None
        return after - before if after >= before else None  # a reset (perfquery -R) in between
    if after >= before:
        return after - before
    if bits < 64 and before <= top:
        return after + (1 << bits) - before  # wrapped once
    return None  # a 64-bit counter going backwards is a driver reset


def compare(group: str, first: dict, second: dict, seconds: float) -> dict:
    """{'delta', 'rate' (per second), 'saturated', 'absent'} between two samples.

    delta/rate hold the counters read as integers in both samples; 'absent' names the counters
    that one sample lacks or that did not read as an integer: their change is unknown, not zero.
    """
    deltas: dict[str, int | None] = {}
    rates: dict[str, float | None] = {}
    saturated = []
    # Both samples' integer counters found in two set operations: a port shows a hundred of them.
    # What a chained probe took on its way (probes/chain.py) rides beside the counters: not a counter.
    both = {n for n, v in first.items() if _counter(v)} & {n for n, v in second.items() if _counter(v)}
    absent = sorted((first.keys() | second.keys()) - both - {VIA})
    for name, after in second.items():
        if name not in both:
            continue
        before = first[name]
        mode, bits = counter_mode(group, name)
        d = _delta(mode, bits, before, after)
        if mode == "saturate" and max(before, after) >= (1 << bits) - 1:
            saturated.append(name)
        deltas[name] = d
        rates[name] = None if d is None or seconds <= 0 else round(d / seconds, 3)
    return {"delta": deltas, "rate": rates, "saturated": sorted(saturated), "absent": absent}


def _counter(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
