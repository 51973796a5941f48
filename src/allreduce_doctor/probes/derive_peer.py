"""The switch side of each InfiniBand link: the peer port's physical errors between the two samples.

symbol_error, port_rcv_errors and the other link errors are counted by the *receiving* port
(kernel Documentation/ABI/stable/sysfs-class-infiniband), so this host's own counters see only
what it receives; a bad transmit lane, optic or cable end of this host shows at the peer port,
read by the chained probes rdma.peer_counters_ext (perfquery -x, 64-bit) and rdma.peer_counters
(16-bit PortCounters, the fallback) in probes/rdma.yaml. The rules are the host side's
(derive_counters): growth stands even on an idle window, "no growth" counts only when every
counter was read twice, none is pinned at its maximum, and traffic flowed on this host's side of
the same link; a value read once is history, not growth.
"""

from __future__ import annotations

from allreduce_doctor.domain import IB_LINK_ERRORS
from allreduce_doctor.observations import OK, Observation
from allreduce_doctor.probes.chain import VIA
from allreduce_doctor.probes.derive_counters import RERUN, active_ports, finish_rows, judged_count, sampled_records

Inputs = dict[str, Observation]
UNREAD = "the switch side was not read"


def ib_peer_errors(inputs: Inputs) -> Observation:
    """Per active IB compute port: who its peer is and how much the peer's link errors grew."""
    ports = active_ports(inputs, "InfiniBand")
    if isinstance(ports, Observation):
        return ports
    peer, ext = inputs["rdma.peer_counters"], inputs.get("rdma.peer_counters_ext")
    if ports and peer.status != OK and (ext is None or ext.status != OK):
        return Observation("", None, peer.status, reason=f"{UNREAD}: {peer.reason or peer.status}")
    records, local, wide = sampled_records(peer), sampled_records(inputs["ib.counters"]), sampled_records(ext)
    rows = []
    for port in ports:
        rec, counters = _wide_first(wide.get(port["name"]), records.get(port["name"]))
        via = ((rec or {}).get("values") or {}).get(VIA) or {}
        row = {"name": port["name"], "peer": _peer(via), "grew": _grew(rec), "counters": counters}
        if rec is not None and rec.get("_reason"):
            row["peer_link_errors"], why = None, f"{UNREAD}: {rec['_reason']}"
        else:
            idle, idle_why = _idle(local.get(port["name"]))
            row["peer_link_errors"], why = judged_count(rec, list(IB_LINK_ERRORS), idle, idle_why)
        row["unknown"] = {"peer_link_errors": why} if why else {}
        rows.append(row)
    return finish_rows(rows, "no active InfiniBand compute ports")


def _wide_first(wide: dict | None, narrow: dict | None) -> tuple[dict | None, str]:
    """The 64-bit PortCountersExtended read (perfquery -x) where the switch port answered it with
    its error counters, else the 16-bit PortCounters one, whose error fields of a long-lived
    switch port may sit saturated (review 2.P)."""
    if wide is not None and not wide.get("_reason") and isinstance(wide.get("delta"), dict):
        return wide, "PortCountersExtended (64-bit, perfquery -x)"
    return narrow, "PortCounters (16-bit)"


def _idle(own: dict | None) -> tuple[bool | None, str]:
    """Whether this host's side of the link carried traffic (the peer's 32-bit data counters are
    not read: they saturate within a second at NDR)."""
    idle = (own or {}).get("idle")
    if idle is None:
        return None, f"whether traffic flowed on the link is unknown: {RERUN}"
    return idle, f"the window was idle: {RERUN}" if idle else ""


def _peer(via: dict) -> str | None:
    """'Switch 0x1070fd0300370ea2 port 17 (LID 12)', from what the chain took on its way."""
    if not via:
        return None
    return (f"{via.get('peer_type', 'peer')} {via.get('peer_guid', '')} port {via.get('peer_port')}"
            f" (LID {via.get('peer_lid')})").replace("  ", " ")


def _grew(rec: dict | None) -> dict[str, int]:
    """The link error counters that grew at the peer, for the evidence."""
    delta = (rec or {}).get("delta") or {}
    return {name: delta[name] for name in IB_LINK_ERRORS if delta.get(name)}


DERIVATIONS = {"ib_peer_errors": ib_peer_errors}
