"""Derived facts about the job's NCCL settings and the GPU/NIC topology.

Kept apart from derive.py (the fabric facts); both register into DERIVATIONS.
"""

from __future__ import annotations

from collections import Counter

from allreduce_doctor.domain import is_virtual_iface
from allreduce_doctor.observations import MISSING, NOT_APPLICABLE, OK, Observation

Inputs = dict[str, Observation]

TOPO_RANK = {"X": -1, "NV": 0, "PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5}
VIRTUAL_VENDORS = ("qemu", "microsoft", "amazon ec2", "google", "vmware", "xen", "openstack", "kvm")


def _env(inputs: Inputs) -> dict | None:
    obs = inputs.get("nccl.env")
    if obs is None or obs.status != OK:
        return None
    return obs.value


def _vars(inputs: Inputs) -> dict:
    return (_env(inputs) or {}).get("vars") or {}


def _known_job(inputs: Inputs, *names: str) -> bool:
    """True when the job's environment was seen, or the variable is set anyway (config file)."""
    env = _env(inputs)
    return env is not None and (env.get("job_found") or any(n in env.get("vars", {}) for n in names))


def _prefix_filter(spec: str):
    """NCCL's list syntax for NCCL_IB_HCA / NCCL_SOCKET_IFNAME: ^ excludes, = exact, else prefix."""
    exclude = spec.startswith("^")
    body = spec.lstrip("^")
    exact = body.startswith("=")
    items = [i.strip() for i in body.lstrip("=").split(",") if i.strip()]

    def selected(name: str, port: str = "") -> bool:
        hit = False
        for item in items:
            dev, _, want_port = item.partition(":")
            if (name == dev if exact else name.startswith(dev)) and (not want_port or want_port == port):
                hit = True
        return hit != exclude

    return selected


def hca_selection(inputs: Inputs) -> Observation:
    """Which ports NCCL_IB_HCA selects; rails it leaves out; ports of another kind it takes in."""
    ports_obs, fabric_obs = inputs["rdma.ports"], inputs["node.fabric"]
    if ports_obs.status != OK or fabric_obs.status != OK or _env(inputs) is None:
        return Observation("", None, MISSING, reason="ports or the job's environment not observed")
    spec = _vars(inputs).get("NCCL_IB_HCA", "")
    layer = {"ib": "InfiniBand", "roce": "Ethernet"}.get(fabric_obs.value.get("fabric"))
    ports = ports_obs.value
    rails = [p for p in ports if p.get("link_layer") == layer]
    main_type = Counter(p.get("hca_type") for p in rails).most_common(1)[0][0] if rails else None
    rails = [p for p in rails if p.get("hca_type") == main_type]
    if not spec:
        return Observation("", {"hca": None, "selected": [p["name"] for p in rails], "left_out": [],
                                "foreign": [], "problem": False}, OK)
    choose = _prefix_filter(spec)
    selected = [p for p in ports if choose(str(p.get("device")), str(p.get("port")))]
    rail_names = {p["name"] for p in rails}
    left_out = sorted(n for n in rail_names if n not in {p["name"] for p in selected})
    # A port whose link layer was not seen (a truncated paste) is neither a rail nor foreign.
    foreign = sorted(p["name"] for p in selected if p["name"] not in rail_names and p.get("link_layer") is not None)
    value = {"hca": spec, "selected": [p["name"] for p in selected], "left_out": left_out,
             "foreign": foreign, "problem": bool(left_out or foreign or not selected)}
    return Observation("", value, OK)


def socket_ifname(inputs: Inputs) -> Observation:
    """The interfaces NCCL_SOCKET_IFNAME picks; a problem when none, or only virtual ones."""
    if not _known_job(inputs, "NCCL_SOCKET_IFNAME"):
        return Observation("", None, MISSING, reason="the job's environment was not observed")
    spec = _vars(inputs).get("NCCL_SOCKET_IFNAME", "")
    ifaces = inputs["net.all_ifaces"]
    names = [r["name"] for r in ifaces.value or []] if ifaces.status in (OK, NOT_APPLICABLE) else None
    if not spec:
        return Observation("", {"value": None, "matched": None, "problem": None}, OK)
    choose = _prefix_filter(spec)
    problem = None
    matched = None
    if names is not None:
        matched = [n for n in names if choose(n)]
        if not matched:
            problem = "no interface on this node matches"
    items = [i.strip() for i in spec.lstrip("^").lstrip("=").split(",") if i.strip()]
    if not spec.startswith("^") and items and all(is_virtual_iface(i) for i in items):
        problem = "only loopback or virtual interfaces, which peers cannot reach"
    return Observation("", {"value": spec, "matched": matched, "problem": problem}, OK)


def nccl_tuning(inputs: Inputs) -> Observation:
    """Forced tuning that strangles bandwidth: too few channels, a restricted protocol, ..."""
    if not _known_job(inputs, "NCCL_MAX_NCHANNELS", "NCCL_PROTO", "NCCL_ALGO", "NCCL_BUFFSIZE"):
        return Observation("", None, MISSING, reason="the job's environment was not observed")
    env = _vars(inputs)
    ports = inputs["rdma.compute_ports"]
    nics = len(ports.value) if ports.status == OK and ports.value else None  # None: not known
    found = []
    undecided = None

    def number(name: str) -> int | None:
        try:
            return int(str(env[name]).strip(), 0)
        except (KeyError, ValueError):
            return None

    max_ch = number("NCCL_MAX_NCHANNELS") or number("NCCL_MAX_NRINGS")
    if max_ch is not None and max_ch < 2 * (nics or 1):
        found.append({"var": "NCCL_MAX_NCHANNELS", "value": env.get("NCCL_MAX_NCHANNELS", env.get("NCCL_MAX_NRINGS")),
                      "why": f"fewer than 2 channels per NIC ({nics or 1} NICs need at least {2 * (nics or 1)})"})
    elif max_ch is not None and nics is None:  # enough for one NIC; whether for all is not known
        undecided = (f"NCCL_MAX_NCHANNELS={max_ch}: how many NICs NCCL uses is not known "
                     "(paste ibstat or NCCL's `NET/IB : Using` line)")
    proto = env.get("NCCL_PROTO", "")
    if proto and "simple" not in proto.lower() and not proto.startswith("^"):
        found.append({"var": "NCCL_PROTO", "value": proto, "why": "large messages need the Simple protocol"})
    if proto.startswith("^") and "simple" in proto.lower():
        found.append({"var": "NCCL_PROTO", "value": proto, "why": "Simple, the large-message protocol, is excluded"})
    buffsize = number("NCCL_BUFFSIZE")
    if buffsize is not None and buffsize < 1 << 21:
        found.append({"var": "NCCL_BUFFSIZE", "value": env["NCCL_BUFFSIZE"], "why": "below 2 MiB (default 4 MiB)"})
    threads = number("NCCL_NTHREADS")
    if threads is not None and threads < 256:
        found.append({"var": "NCCL_NTHREADS", "value": env["NCCL_NTHREADS"], "why": "fewer than 256 threads per block"})
    if undecided and not found:
        return Observation("", None, MISSING, reason=undecided)
    return Observation("", found, OK)


def _rank(path: str) -> int:
    path = str(path or "")
    return TOPO_RANK["NV"] if path.startswith("NV") else TOPO_RANK.get(path, 9)


def gpu_nic_paths(inputs: Inputs) -> Observation:
    """Per GPU: its closest NIC and the path (PIX best, SYS worst); whether the node is a VM."""
    gpus_obs = inputs.get("pci.gpus")
    if gpus_obs is not None and gpus_obs.status in (OK, NOT_APPLICABLE) and not gpus_obs.value:
        return Observation("", {"gpus": [], "all_phb": False, "virtual": None}, NOT_APPLICABLE,
                           reason="no NVIDIA GPUs")
    topo = inputs["gpu.topo"]
    if topo.status != OK or not isinstance(topo.value, dict):
        status = topo.status if topo.status != OK else MISSING
        return Observation("", None, status, reason=f"gpu.topo: {topo.reason or 'not parsed'}")
    matrix = topo.value.get("matrix") or {}
    legend = topo.value.get("nic_legend") or {}
    dmi = inputs["node.dmi"].value if inputs["node.dmi"].status == OK else {}
    vendor = f"{(dmi or {}).get('sys_vendor') or ''} {(dmi or {}).get('product_name') or ''}".lower()
    virtual = any(v in vendor for v in VIRTUAL_VENDORS) if dmi else None
    gpus = []
    for name, row in matrix.items():
        if not name.startswith("GPU"):
            continue
        nics = {k: v for k, v in row.items() if k.startswith(("NIC", "mlx")) or k in legend.values()}
        if not nics:
            continue
        best = min(nics, key=lambda k: _rank(nics[k]))
        gpus.append({"name": name, "best_nic": legend.get(best, best), "best_path": nics[best]})
    if not gpus:
        return Observation("", [], NOT_APPLICABLE, reason="no GPU-NIC pairs in the topology")
    all_phb = all(g["best_path"] == "PHB" for g in gpus)
    return Observation("", {"gpus": gpus, "all_phb": all_phb, "virtual": virtual}, OK)


def expected_busbw(inputs: Inputs) -> Observation:
    """NICs in use x line rate in GB/s (what all-reduce busbw can reach), and the measured value."""
    ports = inputs["rdma.compute_ports"]
    if ports.status != OK or not ports.value:
        return Observation("", None, ports.status if ports.status != OK else NOT_APPLICABLE,
                           reason=ports.reason or "no compute ports")
    active = [p for p in ports.value if (p.get("state") or {}).get("name") == "ACTIVE" and p.get("rate_gbps")]
    line = sum(p["rate_gbps"] for p in active) / 8.0
    answers = inputs["operator.answers"].value if inputs["operator.answers"].status == OK else {}
    measured = None
    try:
        measured = float(str((answers or {}).get("measured_busbw", "")).strip().split()[0])
    except (ValueError, IndexError):
        measured = None
    ratio = round(measured / line, 3) if measured is not None and line else None
    return Observation("", {"nics": len(active), "line_gbs": round(line, 1), "measured_gbs": measured,
                            "ratio": ratio}, OK)


DERIVATIONS = {
    "hca_selection": hca_selection,
    "socket_ifname": socket_ifname,
    "nccl_tuning": nccl_tuning,
    "gpu_nic_paths": gpu_nic_paths,
    "expected_busbw": expected_busbw,
}
