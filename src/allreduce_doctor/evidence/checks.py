"""log.job: what only a log shows about settings and ports: the interfaces NCCL used, the ports it
used against NCCL_IB_HCA, channel counts, a hung intra-node test, a missing net plugin. Port state
and rate, tuning variables and NCCL_SOCKET_IFNAME are node facts (evidence/node_facts.py)."""

from __future__ import annotations

from allreduce_doctor.domain import LOOPBACK_FIRST, admits_loopback, is_virtual_iface
from allreduce_doctor.evidence.nccl import NcclLog
from allreduce_doctor.nccl_rules import lists as nccl_lists
from allreduce_doctor.nccl_rules.gdr import p2p_forbidden

ROCE_VARS = ("NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_IB_ROCE_VERSION_NUM", "NCCL_IB_ADDR_FAMILY", "NCCL_IB_ADDR_RANGE")
INTERNAL_NETS = ("ib", "socket")
# Failures of the data path or of setup; init notes NCCL worked around are not among them.
_NOTES = {"libibverbs_missing", "no_ib_device", "plugin_failed", "completion_flush"}
_CONNECT_FAILURES = ("connect_refused", "connect_timeout", "connect_aborted", "no_route")


def hca_selects(spec: str, port: str, version=None) -> bool:
    """Whether NCCL_IB_HCA takes the 'dev/port' port, read as the job's NCCL reads it (nccl_rules/lists.py)."""
    return nccl_lists.selects_port(spec, port, version)


def socket_ifaces(nccl: NcclLog, network: str, env: dict, scope: str | None = None) -> list[dict] | None:
    """Interfaces NCCL printed it uses (bootstrap, OOB, sockets) that peers cannot reach. What
    NCCL_SOCKET_IFNAME asks for is judged by the node derivation (probes/derive_job.socket_ifname).
    With none, None (unknown) when the job failed in a way a wrong interface explains and
    NCCL_SOCKET_IFNAME names interfaces a failing host never shows NCCL using: whether that host
    has them is not in the text (see _unverified_ifname)."""
    bad = []
    for label, table in (("bootstrap", nccl.bootstrap), ("oob", nccl.oob)):
        for host, pairs in table.items():
            for iface, addr in pairs:
                if is_virtual_iface(iface) or addr.startswith(("127.", "169.254.")):
                    bad.append({"host": host, "used_for": label, "iface": iface, "address": addr})
    if network == "Socket":
        for host, pairs in nccl.socket_ifaces.items():
            bad += [{"host": host, "used_for": "socket transport", "iface": i, "address": a} for i, a in pairs
                    if is_virtual_iface(i)]
    if "no_socket_iface" in nccl.errors:
        bad.append({"error": nccl.errors["no_socket_iface"]["first"], "source": nccl.errors["no_socket_iface"]["source"]})
    bad += _loopback_targets(nccl)
    # What NCCL_SOCKET_IFNAME makes NCCL choose, where no line shows what it chose (nor that init went through),
    # on a job the text shows across hosts (`scope`, job_summary.py): on one host loopback reaches every rank
    if scope == "inter" and not (nccl.bootstrap or nccl.bootstrap_net or nccl.init_across_hosts()) and admits_loopback(
            env.get("NCCL_SOCKET_IFNAME")):
        bad.append({"setting": "NCCL_SOCKET_IFNAME", "value": str(env["NCCL_SOCKET_IFNAME"]), "why": LOOPBACK_FIRST})
    if not bad and _unverified_ifname(nccl, env):
        return None
    return bad[:8]


def _loopback_targets(nccl: NcclLog) -> list[dict]:
    """TCP connects that failed towards a loopback or link-local address: the address a rank
    connects to is the one its peer listens on, the bootstrap interface it chose (NCCL bootstrap.cc:
    the listen sockets and the handle carry bootstrapNetIfAddr; misc/socket.cc socketStartConnect
    prints it, `Connect to ADDR failed`, v2.12.12..v2.30.7), so the peer advertised an address
    only its own host can reach."""
    out = []
    for name in _CONNECT_FAILURES:
        entry = nccl.errors.get(name) or {}
        for d in entry.get("details", []):
            addr = str(d.get("address") or "")
            if addr.startswith(("127.", "169.254.")):
                out.append({"error": name, "address": addr, "source": entry["source"]})
    return out[:4]


def _unverified_ifname(nccl: NcclLog, env: dict) -> bool:
    """NCCL_SOCKET_IFNAME lists interfaces, a blocking failure has wrong_socket_ifname among its
    causes, and a host that failed printed no interface it chose (with no host named, the log shows
    none at all). NCCL's interface search finds or fails only when the variable names interfaces:
    by default it falls back to docker*, then lo, so it always finds one (misc/socket.cc
    ncclFindInterfaces, "Specified by user : find or fail", v2.4.8..v2.30.7); what it found it
    prints at init (bootstrap.cc `Bootstrap : Using IF:ADDR`, net_socket / net_ib `Using ... OOB
    IF:ADDR`). An exclusion list (`^...`) leaves every other interface, so it is not taken here."""
    spec = str(env.get("NCCL_SOCKET_IFNAME") or "").strip()
    if not spec or spec.startswith("^") or "no_socket_iface" in nccl.errors:  # NCCL said it found none: decided
        return False
    failed = [e for e in nccl.errors.values() if e["blocking"] and "wrong_socket_ifname" in e["causes"]]
    if not failed:
        return False
    chose = set(nccl.bootstrap) | set(nccl.oob) | set(nccl.socket_ifaces)
    hosts = {h for e in failed for h in e["hosts"]}
    return bool(hosts - chose) if hosts else not chose


def channels(nccl: NcclLog, nics: dict, where: str) -> dict:
    coll = max(nccl.channels) if nccl.channels else None  # the widest communicator: sub-communicators use fewer
    count = coll or nccl.ring_channels or max((g["channels"] for g in nccl.graphs), default=None) or None
    too_few = bool(where != "intra" and nics["basis"] == "nccl_log" and count and nics["per_node"]
                   and count < 2 * nics["per_node"])
    return {"channels": count, "nics": nics["per_node"], "too_few": too_few}


def hca(nccl: NcclLog, rdma: dict, env: dict, fab: str, used: set[str]) -> list[dict]:
    """NCCL_IB_HCA matching nothing, or NCCL using ports the pasted tables show unfit."""
    spec = env.get("NCCL_IB_HCA")
    problems = []
    if spec and "no_ib_device" in nccl.errors:
        problems.append({"why": f"NCCL_IB_HCA={spec} matches no device NCCL can open"})
    layer = {"ib": "InfiniBand", "roce": "Ethernet"}.get(fab)
    table = {p["name"]: p for p in rdma.get("ports", [])}
    rates = [p["rate_gbps"] for p in table.values() if p["link_layer"] == layer and p["state"] == "ACTIVE" and p["rate_gbps"]]
    best = max(rates, default=0)
    for name in sorted(used):
        p = table.get(name)
        if p is None or p["state"] not in ("ACTIVE", None):
            # A port that is not ACTIVE is no choice of NCCL's: ncclIbInit skips it whatever NCCL_IB_HCA says
            # (src/transport/net_ib.cc `if (portAttr.state != IBV_PORT_ACTIVE) continue;` v2.21.5-1,
            # net_ib/init.cc v2.30.7-1). The node's rule judges it (trunk.ports_active over rdma.compute_ports,
            # the rails NCCL_IB_HCA selects): ib_port_down, as on the node the paste was taken on.
            continue
        if layer and p["link_layer"] and p["link_layer"] != layer:
            problems.append({"port": name, "why": f"used by NCCL but its link layer is {p['link_layer']}"})
        elif p["rate_gbps"] and p["rate_gbps"] < best:
            problems.append({"port": name, "why": f"used by NCCL at {p['rate_gbps']:g} Gb/s, peers at {best:g}"})
    return problems[:8]


def used_ports(nccl: NcclLog, rdma: dict, env: dict) -> set[str]:
    used = {n.replace(":", "/") for per in nccl.net_using.values() for net, names in per.items() if net != "Socket"
            for n in names}
    spec = env.get("NCCL_IB_HCA")
    if not used and spec:
        used = {p["name"] for p in rdma.get("ports", []) if hca_selects(spec, p["name"], nccl.version)}
    return used


def p2p_hang(nccl: NcclLog, run: dict | None, where: str, env: dict) -> bool:
    """An intra-node nccl-tests run that listed its GPUs and never printed a result, no error."""
    if where != "intra" or not run or (run.get("ranks") or 0) < 2 or run["rows"] or run["completed"] or run["failures"]:
        return False
    if p2p_forbidden(env, nccl.version):
        return False
    return not any(e["blocking"] for k, e in nccl.errors.items() if k not in _NOTES)


def plugin_missing(nccl: NcclLog, env: dict) -> bool:
    if "net_not_found" in nccl.errors:
        return True
    wanted = str(env.get("NCCL_NET", "")).strip().strip("'\"").lower()
    external = bool(wanted) and wanted not in INTERNAL_NETS
    return (external or bool(env.get("NCCL_NET_PLUGIN"))) and nccl.plugin in ("none", None) and \
        ("plugin_failed" in nccl.errors or nccl.plugin == "none")


def ib_devices_hidden(nccl: NcclLog, rdma: dict, env: dict, launch: dict) -> bool:
    """NCCL cannot open or find RDMA devices that exist: pasted tables show them, or the job runs in
    a container started without /dev/infiniband."""
    if "ib_open_failed" in nccl.errors:
        return True
    if "no_ib_device" not in nccl.errors or env.get("NCCL_IB_HCA"):
        return False
    shown = any(p["link_layer"] != "Ethernet" or p["state"] == "ACTIVE" for p in rdma.get("ports", []))
    container = launch.get("container") or {}
    return shown or container.get("ib_devices") is False  # a pod-spec fragment may leave it unknown (None)


def errors_by_cause(nccl: NcclLog) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for kind, entry in nccl.errors.items():
        for cause in entry["causes"]:
            out.setdefault(cause, []).append(kind)
    return dict(sorted(out.items()))
