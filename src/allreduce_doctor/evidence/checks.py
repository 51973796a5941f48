"""log.job verdicts about settings and ports: socket interfaces, NCCL_IB_HCA, tuning variables,
channel counts, port state and rate, a hung intra-node test, a missing net plugin."""

from __future__ import annotations

from allreduce_doctor.domain import is_virtual_iface
from allreduce_doctor.evidence.nccl import NcclLog

ROCE_VARS = ("NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_IB_ROCE_VERSION_NUM", "NCCL_IB_ADDR_FAMILY", "NCCL_IB_ADDR_RANGE")
INTERNAL_NETS = ("ib", "socket")
# Failures of the data path or of setup; init notes NCCL worked around are not among them.
_NOTES = {"libibverbs_missing", "no_ib_device", "plugin_failed", "completion_flush"}


def hca_selects(spec: str, port: str) -> bool:
    """NCCL's list syntax for NCCL_IB_HCA: ^ excludes, = exact, else prefix; 'dev:port' items."""
    exclude = spec.startswith("^")
    body = spec.lstrip("^")
    exact = body.startswith("=")
    dev, _, num = port.partition("/")
    hit = False
    for item in (i.strip() for i in body.lstrip("=").split(",") if i.strip()):
        want_dev, _, want_port = item.partition(":")
        if (dev == want_dev if exact else dev.startswith(want_dev)) and (not want_port or want_port == num):
            hit = True
    return hit != exclude


def socket_ifaces(nccl: NcclLog, env: dict, network: str) -> list[dict]:
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
    spec = env.get("NCCL_SOCKET_IFNAME", "")
    items = [i.strip() for i in spec.lstrip("^=").split(",") if i.strip()]
    if items and not spec.startswith("^") and all(is_virtual_iface(i) for i in items):
        bad.append({"env": "NCCL_SOCKET_IFNAME", "value": spec, "why": "only loopback or virtual interfaces"})
    if "no_socket_iface" in nccl.errors:
        bad.append({"error": nccl.errors["no_socket_iface"]["first"], "source": nccl.errors["no_socket_iface"]["source"]})
    return bad[:8]


def tuning(env: dict, nics: int | None) -> list[dict]:
    found = []
    need = 2 * (nics or 1)

    def number(name: str) -> int | None:
        try:
            return int(str(env[name]).strip(), 0)
        except (KeyError, ValueError):
            return None

    max_ch = number("NCCL_MAX_NCHANNELS") if "NCCL_MAX_NCHANNELS" in env else number("NCCL_MAX_NRINGS")
    if max_ch is not None and max_ch < need:
        found.append({"var": "NCCL_MAX_NCHANNELS", "value": max_ch, "why": f"fewer than 2 channels per NIC (need {need})"})
    proto = str(env.get("NCCL_PROTO", ""))
    if proto and not proto.startswith("^") and "simple" not in proto.lower():
        found.append({"var": "NCCL_PROTO", "value": proto, "why": "large messages need the Simple protocol"})
    if proto.startswith("^") and "simple" in proto.lower():
        found.append({"var": "NCCL_PROTO", "value": proto, "why": "Simple, the large-message protocol, is excluded"})
    buffsize = number("NCCL_BUFFSIZE")
    if buffsize is not None and buffsize < 1 << 21:
        found.append({"var": "NCCL_BUFFSIZE", "value": buffsize, "why": "below 2 MiB (default 4 MiB)"})
    threads = number("NCCL_NTHREADS")
    if threads is not None and threads < 256:
        found.append({"var": "NCCL_NTHREADS", "value": threads, "why": "fewer than 256 threads per block"})
    return found


def channels(nccl: NcclLog, nics: dict, where: str) -> dict:
    coll = max(nccl.channels) if nccl.channels else None  # the widest communicator: sub-communicators use fewer
    count = coll or nccl.ring_channels or max((g["channels"] for g in nccl.graphs), default=None) or None
    too_few = bool(where != "intra" and nics["basis"] == "nccl_log" and count and nics["per_node"]
                   and count < 2 * nics["per_node"])
    return {"channels": count, "nics": nics["per_node"], "too_few": too_few}


def ports(rdma: dict, fab: str, used: set[str]) -> dict:
    """Ports that are down, slower than their peers, or at an old speed, from pasted tables."""
    layer = {"ib": "InfiniBand", "roce": "Ethernet"}.get(fab)
    known = [p for p in rdma.get("ports", []) if layer and p["link_layer"] == layer and not p.get("layer_inferred")]
    best: dict = {}
    for p in known:
        if p["state"] == "ACTIVE" and p["rate_gbps"]:
            best[p["model"]] = max(best.get(p["model"], 0), p["rate_gbps"])
    degraded = []
    from allreduce_doctor.evidence.rdma import MODEL_MAX_GBPS

    for p in known:
        if p["state"] != "ACTIVE" or not p["rate_gbps"]:
            continue
        cap = MODEL_MAX_GBPS.get(p["model"] or 0)
        why = None
        if p["rate_gbps"] < best.get(p["model"], 0):
            why = f"{p['rate_gbps']:g} Gb/s where its peers run at {best[p['model']]:g}"
        elif p["width"] in (1, 2) and layer == "InfiniBand":
            why = f"{p['width']}X width where 4X is normal"
        elif cap and p["rate_gbps"] < cap:
            why = f"{p['rate_gbps']:g} Gb/s on an adapter rated for {cap} Gb/s"
        if why:
            degraded.append({"port": p["name"], "why": why, "source": p["source"]})
    down = [{"port": p["name"], "state": p["state"], "source": p["source"]} for p in rdma.get("ports", [])
            if p["name"] in used and p["state"] not in ("ACTIVE", None)]
    return {"degraded": degraded[:8], "down_used": down[:8]}


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
        if p is None:
            continue
        if p["state"] not in ("ACTIVE", None):
            if spec:  # chosen by NCCL_IB_HCA; a port NCCL took by itself and that went down is ib_port_down
                problems.append({"port": name, "why": f"selected by NCCL_IB_HCA={spec} but {p['state']}"})
        elif layer and p["link_layer"] and p["link_layer"] != layer:
            problems.append({"port": name, "why": f"used by NCCL but its link layer is {p['link_layer']}"})
        elif p["rate_gbps"] and p["rate_gbps"] < best:
            problems.append({"port": name, "why": f"used by NCCL at {p['rate_gbps']:g} Gb/s, peers at {best:g}"})
    return problems[:8]


def used_ports(nccl: NcclLog, rdma: dict, env: dict) -> set[str]:
    used = {n.replace(":", "/") for per in nccl.net_using.values() for net, names in per.items() if net != "Socket"
            for n in names}
    spec = env.get("NCCL_IB_HCA")
    if not used and spec:
        used = {p["name"] for p in rdma.get("ports", []) if hca_selects(spec, p["name"])}
    return used


def p2p_hang(nccl: NcclLog, run: dict | None, where: str, env: dict) -> bool:
    """An intra-node nccl-tests run that listed its GPUs and never printed a result, no error."""
    if where != "intra" or not run or (run.get("ranks") or 0) < 2 or run["rows"] or run["completed"] or run["failures"]:
        return False
    if env.get("NCCL_P2P_DISABLE") == "1" or str(env.get("NCCL_P2P_LEVEL", "")).upper() in ("LOC", "0"):
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
    return shown or (bool(container) and not container.get("ib_devices"))


def errors_by_cause(nccl: NcclLog) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for kind, entry in nccl.errors.items():
        for cause in entry["causes"]:
            out.setdefault(cause, []).append(kind)
    return dict(sorted(out.items()))
