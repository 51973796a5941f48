"""log.job: what the pieces of evidence say together about the job. The runbook's conditions read
these verdicts; each carries the values it was computed from, so a report shows the reasoning.

Scope, fabric, NICs per node and line rate, measured against expected bus bandwidth
(NICs per node x line rate; all_reduce busbw = algbw x 2(n-1)/n, as nccl-tests prints it), the
GID NCCL uses, MTUs, GPUDirect RDMA, and how RDMA connections failed.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter

from allreduce_doctor.domain import NCCL_AUTO_GID_SINCE, busbw_verdict
from allreduce_doctor.evidence import checks
from allreduce_doctor.evidence.lines import Where
from allreduce_doctor.evidence.nccl import NcclLog, net_family
from allreduce_doctor.nccl_rules import gdr as nccl_gdr
from allreduce_doctor.nccl_rules.defaults import param_int
from allreduce_doctor.nccl_rules.gid import gid_routable

_MTU_ENUM = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}
# RDMA connection failures. ncclRemoteError ("remote process exited or there was a network error")
# is not one: NCCL returns it for any transport when a peer leaves (src/init.cc ncclGetErrorString).
_CONN = ("qp_timeout", "qp_invalid", "qp_failed", "retry_exceeded", "completion_error")
# An EFA send or receive whose peer never answered (signatures.yaml efa_remote_unreachable, efa_no_response: the
# EFA device's UNREACH_REMOTE / UNRESP_REMOTE status), as aws-ofi-nccl prints a failed request of a connection
# (src/nccl_ofi_rdma.c and nccl_ofi_sendrecv.c `Request %p completed with error`, v1.14.0; src/platform-aws.cpp
# PlatformAWS::log_cq_error, v1.21.1). NCCL's GID, MTU and rail choices do not apply there: libfabric addresses
# the peer (its address vector) and the EFA device fixes the MTU, so the suspect is "efa", which libfabric reads
# as a security group dropping the packets or instances in different subnets (prov/efa/src/efa_strerror.c).
# efa_peer_unresponsive is not one: a peer that answered, then left (libfabric: its process or host is gone).
_EFA_CONN = ("efa_remote_unreachable", "efa_no_response")
# The parts of the text each field of log.job is computed from (nccl: NCCL's lines, env: variables and the
# launch line, tests: nccl-tests output, rdma: RDMA tool outputs, or a log.host field): a check of one field
# speaks with those lines only (field_sources; evidence/differential.py _contradicted).
FIELD_PARTS = {"scope": ("nccl", "env", "tests"), "nodes": ("nccl", "env", "tests"), "ranks": ("nccl", "env", "tests"),
               "ranks_per_node": ("nccl", "env", "tests"), "network": ("nccl",), "fabric": ("nccl", "rdma", "env"),
               "nics": ("nccl", "rdma", "env"), "single_nic": ("nccl", "env", "tests"),
               "bandwidth": ("tests", "nccl", "rdma"), "gdr": ("nccl", "env", "topology"), "gid": ("nccl", "rdma", "env"),
               "mtu": ("nccl",), "connections": ("nccl", "rdma", "env"), "bridge_network": ("nccl",),
               "bad_socket_ifaces": ("nccl", "env"), "channels": ("nccl", "rdma", "env"),
               "hca_problems": ("nccl", "rdma", "env"), "ib_devices_hidden": ("nccl", "rdma", "env"),
               "plugin_missing": ("nccl", "env"), "plugin_abi": ("nccl",), "p2p_hang": ("nccl", "tests", "env"),
               "errors_by_cause": ("nccl",),
               "blocking_errors": ("nccl",), "virtual_pcie": ("pcie_tree",), "kernel_signals": ("kernel_signals",)}
_DOCKER_BRIDGE = ipaddress.ip_network("172.17.0.0/16")
_CONTAINER_ID_RE = re.compile(r"[0-9a-f]{12}")


def _ver(text: str | None) -> tuple:
    try:
        return tuple(int(x) for x in (text or "").split("+")[0].split(".")[:3])
    except ValueError:
        return ()


def scope(nccl: NcclLog, launch: dict, run: dict | None) -> dict:
    hosts = {h for h in nccl.hosts if h != "?"}
    test_hosts = set(run["hosts"]) if run else set()
    launch_hosts = set(launch.get("hosts") or [])
    nodes = max(len(hosts), len(test_hosts), len(launch_hosts), nccl.nnodes or 0, launch.get("nodes") or 0) or None
    ranks = max(nccl.nranks, (run or {}).get("ranks") or 0, launch.get("np") or 0) or None
    per_host = max((len({d for d in devs if d is not None}) for devs in nccl.hosts.values()), default=0)
    per_node = nccl.local_ranks or launch.get("per_node") or max((run or {}).get("ranks_per_host") or 0, per_host) or None
    # One host printed a device for every rank of the communicator (`comm ... nranks N`): it is all on that host.
    one_host = len(hosts) == 1 and bool(nccl.nranks) and per_host >= nccl.nranks
    if (nodes or 0) >= 2:
        kind = "inter"
    elif nccl.nnodes == 1 or one_host or (run and run.get("nodes") == 1 and run.get("ranks")
                                           and len(hosts | test_hosts) <= 1
                                           and (not nccl.nranks or nccl.nranks <= run["ranks"])):
        kind = "intra"
    else:
        kind = "unknown"
    return {"scope": kind, "nodes": nodes, "ranks": ranks, "ranks_per_node": per_node, "hosts": sorted(hosts | test_hosts)[:16]}


def fabric(nccl: NcclLog, rdma: dict, env: dict) -> str:
    """The fabric of the ports NCCL uses, in the node side's order (probes/derive.py node_fabric):
    the pasted ports NCCL_IB_HCA selects, then NCCL's own `NET/IB : Using` line, then the pasted
    ports' link layers (evidence/rdma.fabric_of). A vote of the pasted ports' states comes last: a
    GB200 tray's IB rail that is down must not turn its storage Ethernet into the job's fabric."""
    hca = env.get("NCCL_IB_HCA")
    chosen = {p.get("link_layer") for p in rdma.get("ports", [])
              if hca and not p.get("layer_inferred") and checks.hca_selects(hca, p["name"], nccl.version)} - {None}
    if len(chosen) == 1 and chosen <= {"InfiniBand", "Ethernet"}:
        return "ib" if chosen == {"InfiniBand"} else "roce"
    layers = set(nccl.hca_layers.values())
    if len(layers) == 1:
        return "roce" if layers == {"RoCE"} else "ib"
    if rdma.get("fabric"):
        return rdma["fabric"]
    if layers:
        return "roce" if Counter(nccl.hca_layers.values()).most_common(1)[0][0] == "RoCE" else "ib"
    details = [d for e in nccl.errors.values() for d in e["details"]]
    if any("%ib" in str(d.get("peer", "")) + str(d.get("address", "")) for d in details):
        return "ib"  # the peer is an IPoIB address
    if any(str(d.get("local_gid", "")).lower().startswith("::ffff:") for d in details) \
            or any(k in env for k in checks.ROCE_VARS):
        return "roce"
    return ""


def nics(nccl: NcclLog, rdma: dict, env: dict, fab: str) -> dict:
    """NICs per node NCCL uses, and their line rate in Gb/s."""
    layer = {"ib": "InfiniBand", "roce": "Ethernet"}.get(fab)
    used = {h: sorted(n for net, names in per.items() if net != "Socket" for n in names)
            for h, per in nccl.net_using.items()}
    used = {h: v for h, v in used.items() if v}
    ports = [p for p in rdma.get("ports", []) if p["link_layer"] in (layer, None) and not p.get("layer_inferred")]
    hca = env.get("NCCL_IB_HCA")
    if hca:
        ports = [p for p in ports if checks.hca_selects(hca, p["name"], nccl.version)]
    count, basis = None, None
    if used:
        count, basis = max(len(v) for v in used.values()), "nccl_log"
    elif ports:
        per_block = Counter(p["source"] for p in ports if p["state"] in ("ACTIVE", None))
        if per_block:
            count, basis = max(per_block.values()), "pasted ports"
    elif nccl.net_bw:
        count, basis = len(nccl.net_bw), "nccl topology"
    names = {n.replace(":", "/") for v in used.values() for n in v}
    rated = [p["rate_gbps"] for p in ports if p["state"] == "ACTIVE" and p["rate_gbps"]
             and (not names or p["name"] in names)]
    line = Counter(rated).most_common(1)[0][0] if rated else None
    if line is None and nccl.net_bw:
        line = round(max(nccl.net_bw.values()) * 8, 1)
    return {"per_node": count, "basis": basis, "line_gbps": line, "used": {h: v for h, v in list(used.items())[:8]}}


def bandwidth(run: dict | None, nic: dict, where: str, env: dict | None = None, host_models: list | None = None) -> dict:
    """The measured busbw against NICs x line rate; for a one-host run (never the NICs' to carry), against what its
    GPUs' links carry (busbw_ceiling.assess, from the GPUs' names the text shows): `hardware` and `ceiling`."""
    measured, basis = None, None
    if run and run.get("unjudged"):  # another tool's table, or more than one run: one sentence, no verdict
        return {"measured_gbs": None, "basis": None, "expected_gbs": None, "nics": nic["per_node"],
                "line_gbps": nic["line_gbps"], "ratio": None, "verdict": "unjudged", "unjudged": run["unjudged"]}
    if run:
        if run.get("peak_busbw_large") is not None:
            measured, basis = run["peak_busbw_large"], "peak busbw at large sizes"
        elif run.get("avg_busbw") is not None:
            measured, basis = run["avg_busbw"], "average busbw over all sizes"
    expected = None
    if nic["per_node"] and nic["line_gbps"]:
        expected = round(nic["per_node"] * nic["line_gbps"] / 8.0, 2)
    out = {"measured_gbs": measured, "basis": basis, "expected_gbs": expected, "nics": nic["per_node"],
           "line_gbps": nic["line_gbps"], "ratio": None, "verdict": "unmeasured"}
    if where == "intra":
        out["verdict"] = "intra_node"
        if measured is not None:
            from allreduce_doctor.busbw_ceiling import assess, topology

            names = list((run or {}).get("gpu_models") or []) + list(host_models or [])
            topo, source = topology(names, (run or {}).get("ranks_per_host"), env or {}, {})
            out["ceiling"] = assess(measured, topo) | {"model_from": source}
            out["hardware"] = out["ceiling"]["hardware"]
        return out
    if measured is None or not expected:
        return out
    out["ratio"], out["verdict"] = busbw_verdict(measured, expected, from_peak=(basis or "").startswith("peak"))  # set with measured
    return out


def gdr(nccl: NcclLog, env: dict, topology: dict | None = None) -> dict:
    """GPUDirect RDMA as the log shows it; with no NET line and no NCCL_NET_GDR_LEVEL, the GPUs a
    pasted topology puts beyond NCCL's default GDR distance (log.host.topology.gdr_out_of_reach)."""
    nets = [t for t in nccl.transports if t.startswith("NET/") and not t.startswith("NET/Socket")]
    with_gdr = [t for t in nets if net_family(t)[1]]
    level = env.get("NCCL_NET_GDR_LEVEL")
    # the level as ncclGetLevel reads it (case-sensitive names, old numbering): nccl_rules/gdr.py
    forbids = level is not None and nccl_gdr.level_forbids_everywhere(level, nccl.version) is not None
    default_level = level is None or nccl_gdr.user_level(level, nccl.version) is None  # ignored: NCCL's default
    state = "unknown"
    if with_gdr or nccl.gdr.get("enabled"):
        state = "partial" if (len(with_gdr) < len(nets) or nccl.gdr.get("disabled")) else "on"
    elif nccl.gdr.get("disabled") or forbids or env.get("NCCL_IB_CUDA_SUPPORT") == "0" or nets:
        state = "off"
    return {"state": state, "net_transports": sorted(nets)[:16], "enabled_msgs": nccl.gdr.get("enabled", 0),
            "disabled_msgs": nccl.gdr.get("disabled", 0), "gdr_level": env.get("NCCL_NET_GDR_LEVEL"),
            "hosts_without": _hosts_without_gdr(nccl) if state == "partial" else [],
            "out_of_reach": (topology or {}).get("gdr_out_of_reach", []) if state == "unknown" and default_level else [],
            "topology_source": (topology or {}).get("source")}


def _hosts_without_gdr(nccl: NcclLog) -> list[str] | None:
    """Hosts none of whose NET connections use GPUDirect RDMA while another host's do; None when
    some NET line named no host. NCCL decides GDR per process from a node-wide check (net_ib
    ncclIbGdrSupport: nv_peer_mem / nvidia-peermem / DMA-BUF): a node failing it prints no
    /GDRDMA at all (NVIDIA/nccl#897, NVIDIA/nccl-tests#152: the module missing on one node)."""
    if nccl.net_unattributed:
        return None
    if not any(True in seen for seen in nccl.host_gdr.values()):
        return []
    return sorted(h for h, seen in nccl.host_gdr.items() if seen == {False})[:8]


def gid(nccl: NcclLog, rdma: dict, env: dict, fab: str) -> dict:
    raw = env.get("NCCL_IB_GID_INDEX")
    index = param_int(raw)  # as NCCL_PARAM reads it (nccl_rules/defaults.py), the node side's reading too
    if index is None and nccl.qp_gid:
        index = nccl.qp_gid.most_common(1)[0][0]
    if index is not None and index < 0:
        index = None
    table = rdma.get("gids") or []
    entries = [g for g in table if g["index"] == index] if index is not None else []
    local = [d.get("local_gid") for e in nccl.errors.values() for d in e["details"] if d.get("local_gid")]
    out = {"index": index, "set_by": "NCCL_IB_GID_INDEX" if raw is not None else None, "entries": entries[:4],
           "table_shown": bool(table), "local_gids": sorted(set(local))[:4], "verdict": "unknown"}
    if fab == "ib":
        out["verdict"] = "n/a"
    elif entries:
        routes = [gid_routable(e["kind"], e["version"]) for e in entries]
        out["verdict"] = "bad" if False in routes else "good" if all(routes) else "unknown"
    elif any(g.lower().startswith("fe80") for g in local):
        out["verdict"] = "bad"
    elif index is not None and table:
        out["verdict"] = "bad"  # the pinned index does not exist in the table shown
    elif "qp_invalid" in nccl.errors and index is not None:
        out["verdict"] = "bad"
    elif "qp_no_device" in nccl.errors and raw is not None:
        # ENODEV from the QP's move to RTR names its source GID entry: one with no usable net device
        # here (Linux drivers/infiniband/core/cache.c rdma_read_gid_l2_fields and
        # rdma_read_gid_attr_ndev_rcu, v5.10+). The entry is the one NCCL_IB_GID_INDEX pins: NCCL takes a
        # set index as is, unchecked (net_ib ncclIbGetGidIndex v2.21.5-1..v2.30.7-1; read directly
        # before), so the pinned index is wrong for this host or pod.
        out["verdict"] = "bad"
    elif index is not None:
        out["verdict"] = "set"
    elif any(g.lower().startswith("::ffff:") for g in local):
        out["verdict"] = "good"
    else:
        # NCCL picks the GID itself; which one depends on its version (index 0 before 2.21), so an
        # unknown version leaves the choice unknown (the log's `NCCL version` line decides it).
        version = _ver(nccl.version)
        out["verdict"] = "unknown" if not version else "auto" if version >= NCCL_AUTO_GID_SINCE else "default"
    return out


def mtu(nccl: NcclLog) -> dict:
    """The RDMA MTU NCCL's own QP lines show (NCCL_DEBUG=TRACE/INFO `qpn ... mtu N`). A pasted
    port table's active_mtu is a node fact (tools.ibv_devinfo) and judged by the node checks."""
    active = sorted({_MTU_ENUM[e] for e in nccl.qp_mtu if e in _MTU_ENUM})
    verdict = "mismatch" if len(active) > 1 else "low" if active and active[0] < 4096 else "ok" if active else "unknown"
    return {"active_mtus": active, "verdict": verdict}


def _ipv4(text: str | None):
    if not text:
        return None
    text = text.lower()
    if text.startswith("::ffff:"):
        text = text[7:]
    try:
        return ipaddress.IPv4Address(text)
    except ValueError:
        return None


def connections(nccl: NcclLog, fab: str, gid_info: dict, mtu_info: dict, env: dict, rdma: dict) -> dict:
    # Pasted port tables that all show a 4096 active MTU rule the MTU out as the failure's reason.
    mtus = [p.get("active_mtu") for p in rdma.get("ports", []) if p["state"] in ("ACTIVE", None)]
    ports_full_mtu = bool(mtus) and all(m == 4096 for m in mtus)
    counts = {k: nccl.errors[k]["count"] for k in _CONN + _EFA_CONN if k in nccl.errors}
    pairs = []
    for k in _CONN:
        for d in (nccl.errors.get(k) or {}).get("details", []):
            a, b = _ipv4(d.get("local_gid")), _ipv4(d.get("remote_gid") or d.get("peer"))
            if a and b:
                pairs.append((a, b))
    cross = bool(pairs) and all(ipaddress.ip_network(f"{a}/24", strict=False) != ipaddress.ip_network(f"{b}/24", strict=False)
                                for a, b in pairs)
    failures = bool(counts)
    suspect: str | None = ""
    if failures and not any(k in counts for k in _CONN):
        suspect = "efa"
    elif failures:
        # NCCL's default GID (index 0 before 2.21) is only a suspect where the fabric is RoCE.
        if (fab != "ib" and gid_info["verdict"] == "bad") or (fab == "roce" and gid_info["verdict"] == "default"):
            suspect = "gid"
        elif cross and env.get("NCCL_CROSS_NIC") != "0":
            suspect = "cross_rail"
        elif mtu_info["verdict"] in ("mismatch", "low"):
            suspect = "mtu"
        elif (fab != "ib" and gid_info["verdict"] in ("unknown", "set")) or (mtu_info["verdict"] == "unknown"
                                                                            and not ports_full_mtu):
            # The GID NCCL used or the path MTU is not in the evidence: either could be the reason,
            # so the suspect stays unknown (show_gids + NCCL_IB_GID_INDEX, ibv_devinfo decide it).
            suspect = None
        else:
            suspect = "unreachable"
    return {"failures": failures, "counts": counts, "cross_subnet": cross, "suspect": suspect}


def bridge(nccl: NcclLog) -> list[dict]:
    found = []
    for table in (nccl.bootstrap, nccl.oob, nccl.socket_ifaces):
        for host, pairs in table.items():
            for iface, addr in pairs:
                ip = _ipv4(addr.split("%")[0])
                # the host's own docker0 is a wrong interface choice (wrong_socket_ifname), not this
                if ip and ip in _DOCKER_BRIDGE and not iface.startswith(("docker", "br-", "veth")):
                    found.append({"host": host, "iface": iface, "address": addr})
    for name in ("connect_refused", "connect_timeout", "no_route", "no_iface_subnet"):
        for d in (nccl.errors.get(name) or {}).get("details", []):
            ip = _ipv4(d.get("address") or d.get("peer"))
            if ip and ip in _DOCKER_BRIDGE:
                found.append({"error": name, "address": str(ip), "source": nccl.errors[name]["source"]})
    # NCCL found no usable interface on a host named like a Docker container: Docker names a container
    # after its ID unless it shares the host's network, where it keeps the host's name (moby
    # daemon/container.go newContainer / generateHostname: id[:12]). Its own network namespace lacks
    # the host's interfaces (NVIDIA/nccl#331, NVIDIA/nccl#929, NVIDIA/nccl-tests#14: host network fixed it).
    for name in ("no_socket_iface", "no_iface_subnet"):
        entry = nccl.errors.get(name) or {}
        for host in entry.get("hosts", []):
            if _CONTAINER_ID_RE.fullmatch(host) and not host.isdigit():
                found.append({"error": name, "host": host, "container": "own network namespace",
                              "source": entry["source"]})
    return found[:8]


def field_sources(parts: dict[str, Where]) -> dict[str, str]:
    """field -> the FILE:LINE ranges it is computed from (FIELD_PARTS), given the lines of each part;
    overlapping parts merge into one range list."""
    out = {}
    for field, names in FIELD_PARTS.items():
        where = Where()
        for part in (parts[n] for n in names if parts.get(n)):
            for name, first, last in part.ranges:
                where.add_range(name, first, last)
        if where:
            out[field] = where.text()
    return out
