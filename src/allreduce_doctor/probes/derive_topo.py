"""Per GPU, its closest NIC and the path to it (nvidia-smi topo -m; NUMA for Grace C2C GPUs), and
whether the node is a VM. Split from derive_job.py; registered into derive.DERIVATIONS."""

from __future__ import annotations

from allreduce_doctor.observations import MISSING, NOT_APPLICABLE, OK, Observation
from allreduce_doctor.probes.derive_job import _rank

Inputs = dict[str, Observation]
VIRTUAL_VENDORS = ("qemu", "microsoft", "amazon ec2", "google", "vmware", "xen", "openstack", "kvm")


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
    virtual = any(v in vendor for v in VIRTUAL_VENDORS) if dmi else _numa_spanned(matrix, topo.value)
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
        if virtual and _gpus_behind_host_bridge(matrix):  # a VM that shows no NIC: the GPUs' own paths
            return Observation("", {"gpus": [], "all_phb": True, "virtual": True, "from": "GPU-GPU paths"}, OK,
                               reason="no GPU-NIC pairs in the topology; every GPU-GPU path is PHB")
        return Observation("", [], NOT_APPLICABLE, reason="no GPU-NIC pairs in the topology")
    c2c = topo.value.get("gpu_numa_id") or {}
    if any(g["name"] in c2c for g in gpus):
        sided = _c2c_paths(inputs, gpus, c2c, topo.value.get("numa_affinity") or {})
        if sided is None:
            return Observation("", None, MISSING, reason="Grace (C2C) GPUs: nvidia-smi topo -m shows every NIC as "
                               "SYS, and the NICs' NUMA nodes (pci.nics numa_node) were not read")
        gpus = sided
    all_phb = all(g["best_path"] == "PHB" for g in gpus)
    return Observation("", {"gpus": gpus, "all_phb": all_phb, "virtual": virtual}, OK)


def _numa_spanned(matrix: dict, topo: dict) -> bool | None:
    """When the machine type (DMI) was not read: True when every GPU (none C2C) has affinity to several NUMA nodes,
    which no bare-metal GPU has (a PCI device hangs off one node: its sysfs numa_node is one number,
    Documentation/ABI/testing/sysfs-bus-pci; nvidia-smi prints a range when the VM hides it), else None:
    one node per GPU does not prove bare metal (a VM may pass its vNUMA through)."""
    if topo.get("gpu_numa_id"):  # a Grace (C2C) GPU's row lists its CPU's NUMA nodes on bare metal too
        return None
    numa = topo.get("numa_affinity") or {}
    gpus = [g for g in matrix if str(g).startswith("GPU")]
    spans = [len(_numa_set(numa.get(g))) > 1 for g in gpus]
    return True if spans and all(spans) else None


def _gpus_behind_host_bridge(matrix: dict) -> bool:
    """Two or more GPUs, and every path between them PHB (nvidia-smi topo -m: through the host bridge)."""
    gpus = [g for g in matrix if str(g).startswith("GPU")]
    cells = [cell for g in gpus for col, cell in (matrix[g] or {}).items() if col != g and str(col).startswith("GPU")]
    return len(gpus) > 1 and bool(cells) and all(c == "PHB" for c in cells)


def _numa_set(text) -> set[int]:
    """'0,3-9,11-17' -> {0, 3, ..., 17}; set() when unreadable."""
    out: set[int] = set()
    for part in str(text or "").split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (not hi or hi.isdigit()):
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def _c2c_paths(inputs: Inputs, gpus: list[dict], c2c: dict, affinity: dict) -> list[dict] | None:
    """A GPU with its own NUMA node hangs off a Grace CPU by NVLink-C2C (GB200, GH200): nvidia-smi
    prints SYS to every NIC (sgl-project/sglang#11208), so its side of the machine comes from NUMA:
    a NIC whose numa_node is in the GPU's NUMA affinity is on its CPU (NODE), none is SYS. NCCL's
    own path to a NIC on that CPU is P2C (graph/paths.cc, v2.27.3-1 on). None when not readable."""
    nics = inputs.get("pci.nics")
    if nics is None or nics.status != OK:
        return None
    numa = {str(n.get("name")): n.get("numa_node") for n in nics.value or [] if isinstance(n.get("numa_node"), int)}
    if not numa:
        return None
    out = []
    for g in gpus:
        if g["name"] not in c2c:
            out.append(g)
            continue
        mine = _numa_set(affinity.get(g["name"]))
        if not mine:
            return None
        near = sorted(bdf for bdf, node in numa.items() if node in mine)
        out.append({"name": g["name"], "best_nic": near[0] if near else g["best_nic"],
                    "best_path": "NODE" if near else "SYS", "from": "NUMA node (C2C GPU)"})
    return out


DERIVATIONS = {"gpu_nic_paths": gpu_nic_paths}
