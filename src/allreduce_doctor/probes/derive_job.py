"""Derived facts about the job's NCCL settings and the GPU/NIC topology.

Kept apart from derive.py (the fabric facts); both register into DERIVATIONS.
"""

from __future__ import annotations

from collections import Counter

from allreduce_doctor.domain import is_virtual_iface
from allreduce_doctor.errors import DoctorError
from allreduce_doctor.nccl_rules import lists as nccl_lists
from allreduce_doctor.observations import ERROR, MISSING, NOT_APPLICABLE, OK, Observation
from allreduce_doctor.probes.derive_env import IB_TRANSPORT_VARS, ib_overrides
from allreduce_doctor.site import declared

Inputs = dict[str, Observation]

TOPO_RANK = {"X": -1, "NV": 0, "PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5}


def blocked_input(inputs: Inputs, *facts: str) -> Observation | None:
    """An Observation passing on the first essential input that is not ok, else None."""
    for fact in facts:
        obs = inputs[fact]
        if obs.status != OK:
            return Observation("", obs.value if obs.status == NOT_APPLICABLE else None, obs.status,
                               reason=f"{fact}: {obs.reason or obs.status}")
    return None


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


def _prefix_filter(spec: str, version=None):
    """NCCL's list syntax for NCCL_IB_HCA / NCCL_SOCKET_IFNAME at the job's version (nccl_rules/lists.py)."""
    parsed = nccl_lists.parse(spec, version)

    def selected(name: str, port: str = "") -> bool:
        return parsed.selects(name, port or None)

    return selected


def rail_groups(inputs: Inputs, layer_ports: list[dict]) -> tuple[list[set[str]] | None, str]:
    """Per GPU, the NICs closest to it in `nvidia-smi topo -m` when they are PIX or PXB: NCCL pairs a
    GPU with its nearest NIC (src/graph/paths.cc, search.cc ncclTopoSelectNets by path type). A GPU's
    rail is one of its closest NICs, not every NIC near it: GPUDirect Storage puts storage HCAs
    under the GPUs' PCIe switches (GDS design guide), a PXB one is never a rail where a PIX one is.
    Storage cards on the CPU's root ports (DGX H100) are NODE or SYS from every GPU. (None, why)
    when the topology does not say."""
    topo = inputs.get("gpu.topo")
    if topo is None or topo.status != OK or not isinstance(topo.value, dict):
        return None, "no GPU topology (nvidia-smi topo -m)"
    legend = topo.value.get("nic_legend") or {}
    known = {str(p.get("device")) for p in layer_ports}
    groups = []
    for name, row in (topo.value.get("matrix") or {}).items():
        if not name.startswith("GPU"):
            continue
        near = {legend.get(nic, nic): path for nic, path in row.items() if path in ("PIX", "PXB")
                and legend.get(nic, nic) in known}
        if near:
            best = min(TOPO_RANK[p] for p in near.values())
            groups.append({dev for dev, path in near.items() if TOPO_RANK[path] == best})
    if not groups:
        return None, "no GPU has a PIX/PXB NIC in nvidia-smi topo -m"
    return groups, "GPU affinity (the closest PIX/PXB NIC of each GPU in nvidia-smi topo -m)"


def rail_devices(inputs: Inputs, layer_ports: list[dict]) -> tuple[set[str] | None, str]:
    """The HCAs the GPUs are wired to: the union of each GPU's closest NICs (rail_groups)."""
    groups, why = rail_groups(inputs, layer_ports)
    return (None, why) if groups is None else (set().union(*groups), why)


def model_rails(layer_ports: list[dict]) -> set[str]:
    """Every port of the most common HCA model: the guess when nothing better says."""
    if not layer_ports:
        return set()
    main_type = Counter(p.get("hca_type") for p in layer_ports).most_common(1)[0][0]
    return {p["name"] for p in layer_ports if p.get("hca_type") == main_type}


def _state_name(port: dict) -> str:
    return str((port.get("state") or {}).get("name") or "unknown")


def hca_selection(inputs: Inputs) -> Observation:
    """Which ports NCCL_IB_HCA selects (read as the job's NCCL reads it); rails it leaves out; ports
    of another kind it takes in. A rail is left out when a GPU loses every one of its closest NICs
    (rail_groups); without the topology a rail left out is unknown, not a fault."""
    ports_obs, fabric_obs = inputs["rdma.ports"], inputs["node.fabric"]
    if ports_obs.status != OK or fabric_obs.status != OK or _env(inputs) is None:
        return Observation("", None, MISSING, reason="ports or the job's environment not observed")
    spec = _vars(inputs).get("NCCL_IB_HCA", "")
    version = _job_version(inputs)
    layer = {"ib": "InfiniBand", "roce": "Ethernet"}.get(fabric_obs.value.get("fabric"))
    ports = ports_obs.value
    layer_ports = [p for p in ports if p.get("link_layer") == layer]
    groups, why = rail_groups(inputs, layer_ports)
    if groups is None:
        rail_names, source = model_rails(layer_ports), f"the most common HCA model ({why})"
    else:
        devices = set().union(*groups)
        rail_names, source = {p["name"] for p in layer_ports if p.get("device") in devices}, why
    not_rails = [f"{p['name']} ({_state_name(p)})" for p in layer_ports if p["name"] not in rail_names]
    value = {"hca": spec or None, "rails": sorted(rail_names), "rails_from": source, "not_rails": not_rails}
    if not spec:
        return Observation("", dict(value, selected=sorted(rail_names), left_out=[], foreign=[], problem=False), OK)
    if nccl_lists.grammar(version) is None and nccl_lists.depends_on_version(spec):
        return Observation("", None, MISSING, reason=f"NCCL_IB_HCA={spec} has an empty port field: port 0 (no port) "
                           "before NCCL 2.30.7, every port from it (src/misc/utils.cc parseStringList), and the "
                           "job's NCCL version is not known")
    choose = _prefix_filter(spec, version)
    selected = [p for p in ports if choose(str(p.get("device")), str(p.get("port")))]
    chosen = {p["name"] for p in selected}
    if groups is None:
        left_out = sorted(n for n in rail_names if n not in chosen)
    else:  # a GPU keeps its rail while NCCL takes any of its closest NICs
        lost = [g for g in groups if not any(p.get("device") in g and p["name"] in chosen for p in layer_ports)]
        left_out = sorted({p["name"] for g in lost for p in layer_ports if p.get("device") in g})
    # A port whose link layer was not seen (a truncated paste) is neither a rail nor foreign.
    foreign = sorted(p["name"] for p in selected if p["name"] not in rail_names and p.get("link_layer") is not None)
    problem = True if foreign or not selected else (None if left_out and groups is None else bool(left_out))
    value.update(selected=[p["name"] for p in selected], left_out=left_out, foreign=foreign, problem=problem)
    reason = f"rails from {source}" + ("; a port left out may be a storage port" if problem is None else "")
    return Observation("", value, OK, reason=reason)


def socket_ifname(inputs: Inputs) -> Observation:
    """The interfaces NCCL_SOCKET_IFNAME picks; a problem when none, or only virtual ones. NCCL
    lists them with getifaddrs() in the job's network namespace (src/misc/socket.cc
    ncclFindInterfaces; src/os/linux.cc at v2.30), so the job's /proc/PID/net/dev decides; the
    host's /sys/class/net only when no job is found, and the reason says so. A matched interface
    of the job with no address NCCL takes is none to NCCL (_unaddressed)."""
    if not _known_job(inputs, "NCCL_SOCKET_IFNAME"):
        return Observation("", None, MISSING, reason="the job's environment was not observed")
    spec = _vars(inputs).get("NCCL_SOCKET_IFNAME", "")
    ifaces, job = inputs["net.all_ifaces"], inputs.get("net.job_ifaces")
    names = [r["name"] for r in ifaces.value or []] if ifaces.status in (OK, NOT_APPLICABLE) else None
    where = f"this node's /sys/class/net (judged on the host: {job.reason or job.status})" if job else "this node"
    if job is not None and job.status == OK:
        names, where = list(job.value.get("names") or []), "the job's network namespace"
    if not spec:
        return Observation("", {"value": None, "matched": None, "problem": None}, OK)
    choose = _prefix_filter(spec)
    problem = None
    matched = None
    if names is not None:
        matched = [n for n in names if choose(n)]
        if not matched:
            problem = "no interface in the job's network namespace matches" if where.startswith("the job") \
                else "no interface on this node matches"
    if matched and problem is None and job is not None and where.startswith("the job"):  # job read: OK
        problem = _unaddressed(matched, job.value, _vars(inputs).get("NCCL_SOCKET_FAMILY", ""))
    items = [i.strip() for i in spec.lstrip("^").lstrip("=").split(",") if i.strip()]
    if not spec.startswith("^") and items and all(is_virtual_iface(i) for i in items):
        problem = "only loopback or virtual interfaces, which peers cannot reach"
    if problem is None and names is None:  # unread is unknown: the list may match nothing here
        return Observation("", None, MISSING, reason=f"NCCL_SOCKET_IFNAME={spec} is set but this node's interfaces "
                                                     f"were not read ({ifaces.reason or 'net.all_ifaces missing'})")
    return Observation("", {"value": spec, "matched": matched, "problem": problem}, OK, reason=f"interfaces of {where}")


def _unaddressed(matched: list[str], job: dict, family: str) -> str | None:
    """A problem when no matched interface of the job's netns has an address NCCL takes: it lists
    only interfaces with an AF_INET or AF_INET6 address, of NCCL_SOCKET_FAMILY's family when set
    (src/misc/socket.cc ncclFindInterfaces). None when an address file was not read, or a local
    IPv4 address no connected route places (job_view._addresses) may be on a matched interface."""
    v6, v4, stray = job.get("ipv6"), job.get("ipv4_routed"), job.get("stray_ipv4")
    want = {"AF_INET": ("v4",), "AF_INET6": ("v6",)}.get(family.strip().upper(), ("v4", "v6"))
    if ("v6" in want and v6 is None) or ("v4" in want and (v4 is None or stray != [])):
        return None
    having = (set(v6 or []) if "v6" in want else set()) | (set(v4 or []) if "v4" in want else set())
    if any(name in having for name in matched):
        return None
    kinds = " or ".join({"v4": "IPv4", "v6": "IPv6"}[k] for k in want)
    return (f"{', '.join(matched)} {'has' if len(matched) == 1 else 'have'} no {kinds} address in the job's network "
            "namespace: NCCL lists only interfaces with one")


def nccl_tuning(inputs: Inputs) -> Observation:
    """Forced tuning that strangles bandwidth: too few channels, a restricted protocol, ..."""
    if not _known_job(inputs, "NCCL_MAX_NCHANNELS", "NCCL_PROTO", "NCCL_ALGO", "NCCL_BUFFSIZE", *IB_TRANSPORT_VARS):
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
    fabric = inputs["node.fabric"].value.get("fabric") if inputs["node.fabric"].status == OK else None
    ib_found, ib_undecided = ib_overrides(env, fabric, _job_version(inputs))
    found += ib_found
    undecided = undecided or ib_undecided
    if undecided and not found:
        return Observation("", None, MISSING, reason=undecided)
    return Observation("", found, OK)


def _job_version(inputs: Inputs) -> str | None:
    obs = inputs.get("nccl.version")
    return (obs.value or {}).get("version") if obs is not None and obs.status == OK else None


def _rank(path: str) -> int:
    path = str(path or "")
    return TOPO_RANK["NV"] if path.startswith("NV") else TOPO_RANK.get(path, 9)


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


def nccl_version(inputs: Inputs) -> Observation:
    """The job's NCCL version: the libnccl.so.X.Y.Z mapped by its processes, else the log's
    `NCCL version` line. Unknown when neither says (a pip wheel maps a bare libnccl.so.2)."""
    procs = inputs["nccl.processes"]
    seen = Counter(p.get("nccl_version") for p in (procs.value or []) if p.get("nccl_version")) \
        if procs.status == OK and isinstance(procs.value, list) else Counter()
    if seen:
        version = seen.most_common(1)[0][0]
        return Observation("", {"version": version, "from": "/proc/PID/maps (libnccl)", "versions": sorted(seen)}, OK)
    log = inputs["log.nccl"]
    if log.status == OK and isinstance(log.value, dict) and log.value.get("version"):
        return Observation("", {"version": log.value["version"], "from": "the log's NCCL version line",
                                "versions": [log.value["version"]]}, OK)
    listed = procs.value if isinstance(procs.value, list) else []
    cut = [p["maps_cut"] for p in listed if isinstance(p, dict) and p.get("maps_cut")]
    return Observation("", None, MISSING, reason="no NCCL version: no job maps a versioned libnccl and no log says it"
                       + (f" (not every job's maps was scanned: {cut[0]})" if cut else ""))


def site_policy(inputs: Inputs) -> Observation:
    """The declared fabric policy (site file, then --answer); {} when nothing is declared."""
    site = inputs["site.declared"].value if inputs["site.declared"].status == OK else {}
    answers = inputs["operator.answers"].value if inputs["operator.answers"].status == OK else {}
    try:
        return Observation("", declared(site, answers), OK)
    except DoctorError as err:
        return Observation("", None, ERROR, reason=str(err))


def _upstream(bdf: str, bridges: list[dict]) -> dict | None:
    """The bridge right above `bdf` in lspci -vvv: the narrowest secondary..subordinate range
    holding its bus (same PCI domain)."""
    domain, bus = bdf.rsplit(":", 2)[0], int(bdf.rsplit(":", 2)[1], 16)
    above = [b for b in bridges if b["bdf"].rsplit(":", 2)[0] == domain
             and b["secondary_bus"] is not None and b["secondary_bus"] <= bus <= b["subordinate_bus"]]
    return min(above, key=lambda b: b["subordinate_bus"] - b["secondary_bus"], default=None)


def pci_links(inputs: Inputs) -> Observation:
    """Per RDMA NIC: its PCIe link against what the link can reach, the lower of the NIC's own
    capability and its slot's (the upstream port's LnkCap in lspci -vvv). A Gen5 NIC in a Gen4
    slot trains at 16 GT/s by design (PCIe base spec: a link runs at the highest rate both ends
    support). Without the slot's capability a lower width is still a fault, a lower speed unknown."""
    nics = inputs["pci.nics"]
    if nics.status != OK:
        return Observation("", None, nics.status, reason=f"pci.nics: {nics.reason or nics.status}")
    lspci = inputs["pci.lspci"]
    bridges = [d for d in lspci.value or [] if d.get("secondary_bus") is not None] if lspci.status == OK else []
    out = []
    for nic in nics.value:
        bdf = str(nic.get("name") or "")
        slot = ((_upstream(bdf, bridges) if bdf.count(":") == 2 else None) or {}).get("lnkcap") or {}
        cur_s, max_s, cur_w, max_w = (nic.get(k) for k in ("current_speed_gts", "max_speed_gts", "current_width", "max_width"))
        want_s = min(max_s, slot["speed_gts"]) if max_s and slot.get("speed_gts") else max_s
        want_w = min(max_w, slot["width"]) if max_w and slot.get("width") else max_w
        degraded = None if None in (cur_s, cur_w, want_s, want_w) else cur_w < want_w or cur_s < want_s
        if degraded and not slot and cur_w >= want_w:
            degraded = None  # slower than the NIC can go, and the slot's capability is not known
        out.append({"name": bdf, "current_speed_gts": cur_s, "max_speed_gts": max_s, "slot_speed_gts": slot.get("speed_gts"),
                    "current_width": cur_w, "max_width": max_w, "slot_width": slot.get("width"), "degraded": degraded})
    return Observation("", out, OK)


def iommu_mode(inputs: Inputs) -> Observation:
    """How the IOMMU treats the NICs' and GPUs' DMA: 'translated' when a group is DMA or DMA-FQ,
    'identity' (passthrough) or 'off'. /sys/bus/pci/devices/BDF/iommu_group/type
    (Documentation/ABI/testing/sysfs-kernel-iommu_groups) decides; without it an IOMMU fault in the
    kernel log (_iommu_faults: what the IOMMU did), then the command line when it names the mode (what
    it was told): none named is the kernel's build default, and on x86 that translates
    (drivers/iommu/Kconfig: IOMMU_DEFAULT_DMA_LAZY if X86), so it stays unknown."""
    types = []
    for fact in ("pci.nics", "pci.gpus"):
        obs = inputs[fact]
        if obs.status == OK:
            types += [str(r.get("iommu_type") or "").strip() for r in obs.value or []]
    if any(t in ("DMA", "DMA-FQ") for t in types):
        return Observation("", {"mode": "translated", "from": "iommu_group/type", "types": sorted(set(types))}, OK)
    if types and all(t == "identity" for t in types):
        return Observation("", {"mode": "identity", "from": "iommu_group/type", "types": ["identity"]}, OK)
    if inputs["kernel.iommu_active"].status == OK and inputs["kernel.iommu_active"].value is False:
        return Observation("", {"mode": "off", "from": "no IOMMU registered (/sys/class/iommu)", "types": []}, OK)
    faults = _iommu_faults(inputs.get("kernel.dmesg"))
    if faults:
        return Observation("", {"mode": "translated", "from": "kernel log: an IOMMU fault", "types": [],
                                "example": faults[0][:200]}, OK)
    cmdline = inputs["kernel.cmdline"].value if inputs["kernel.cmdline"].status == OK else {}
    named = {"pt": "identity", "off": "off", "on": "translated"}.get((cmdline or {}).get("iommu", ""))
    if named:
        return Observation("", {"mode": named, "from": "/proc/cmdline", "types": []}, OK)
    return Observation("", None, MISSING, reason="no iommu_group type readable, no IOMMU fault logged (or no kernel log read), "
                       "and the command line names no IOMMU mode")


def _iommu_faults(dmesg: Observation | None) -> list[str]:
    """The kernel log's IOMMU fault lines (parsers/kernel.py `iommu_fault`): a DMA request the remapping
    hardware refused while translating it, which passthrough does not do (Intel DMAR, drivers/iommu/intel/
    dmar.c dmar_fault_do_one "DMAR: [DMA Read] Request device [..] fault addr"; AMD-Vi, drivers/iommu/amd/
    iommu.c "Event logged [IO_PAGE_FAULT ...]"). The same rule for a node's dmesg and a pasted one."""
    if dmesg is None or dmesg.status != OK or not isinstance(dmesg.value, list):
        return []
    return [str(r.get("text") or "") for r in dmesg.value if isinstance(r, dict) and r.get("kind") == "iommu_fault"]


DERIVATIONS = {
    "hca_selection": hca_selection,
    "socket_ifname": socket_ifname,
    "nccl_tuning": nccl_tuning,
    "expected_busbw": expected_busbw,
    "nccl_version": nccl_version,
    "site_policy": site_policy,
    "pci_links": pci_links,
    "iommu_mode": iommu_mode,
}
