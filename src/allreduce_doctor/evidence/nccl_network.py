"""Which network NCCL's lines say each host, and the job, runs on (IB, Socket, a plugin, mixed)."""

from __future__ import annotations

from allreduce_doctor.evidence.nccl import NcclLog, net_family


def host_networks(log: NcclLog) -> dict[str, tuple[str, bool]]:
    """host -> (network, explicit). Old NCCL prints `NET/Socket : Using` before `NET/IB :
    Using` on every host, so a socket line alone is only explicit when NCCL said why."""
    out: dict[str, tuple[str, bool]] = {}
    failed = {h for e in log.errors.values() if e["causes"] and not e["blocking"] for h in e["hosts"]}
    for host in set(log.networks) | set(log.net_using):
        explicit = log.networks.get(host)
        if explicit:
            out[host] = (_short(sorted(explicit)[-1]), True)
            continue
        using = log.net_using.get(host, {})
        rdma = [n for n in using if n != "Socket" and using[n]]
        if rdma:
            out[host] = (_short(rdma[0]), True)
        elif "Socket" in using:
            out[host] = ("Socket", host in failed)
    return out


def network(log: NcclLog) -> str:
    """IB, Socket, a plugin (IBext, Libfabric), 'mixed' when hosts disagree, '' when unsaid."""
    if len(log.net_plugins) > 1:  # some ranks run the external net plugin (IBext), others NCCL's own (IB)
        return "mixed"
    per_host = host_networks(log)
    via = {net_family(t)[0][4:] for t in log.transports if t.startswith("NET/")}
    # Every rank prints `Using network X` at init (NVIDIA/nccl src/init.cc, after ncclNetInit: INFO(NCCL_INIT,
    # "Using network %s")): a host whose line is not in the paste does not use
    # another network because of it, so a named RDMA network outranks one only implied by
    # `NET/... : Using` (and the answer does not depend on which host's line was read).
    named = {_short(n) for names in log.networks.values() for n in names if _short(n) != "Socket"}
    rdma = named or {v for v, _ in per_host.values() if v != "Socket"} | {_short(v) for v in via if v != "Socket"}
    socket_explicit = "Socket" in via or any(v == "Socket" and e for v, e in per_host.values())
    socket_any = socket_explicit or any(v == "Socket" for v, _ in per_host.values())
    if rdma and socket_explicit:
        return "mixed"
    if rdma:
        return sorted(rdma)[0]
    return "Socket" if socket_any else ""


def _short(name: str) -> str:
    """'IB', 'Socket', 'IBext_v8' -> 'IBext', 'AWS Libfabric' -> 'Libfabric'."""
    name = name.strip()
    if name.lower().startswith("ibext"):
        return "IBext"
    if "libfabric" in name.lower() or name.upper().startswith("OFI"):
        return "Libfabric"
    return name
