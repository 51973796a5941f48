"""Rails decided by NUMA locality where no PIX/PXB NIC says which ports are rails (a GB200 tray)."""

from __future__ import annotations

from collections import Counter

from allreduce_doctor.observations import OK
from allreduce_doctor.probes.derive_job import Inputs, _state_name


def _id_list(text: str) -> set[int] | None:
    """A kernel list such as "0,3-9,11-17" (Documentation/admin-guide/cgroup-v1/cpusets.rst list
    format, as nvidia-smi topo -m prints NUMA Affinity); None when it is not one ("N/A")."""
    out: set[int] = set()
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            return None
        out.update(range(int(low), int(high or low) + 1))
    return out


def numa_lost_rails(inputs: Inputs, candidates: list[dict]) -> set[str]:
    """The down ports among `candidates` (the compute model's ports) that a GPU has lost, where no
    PIX/PXB NIC says which are rails (a GB200 tray: every GPU-NIC cell SYS). Without NCCL_IB_HCA
    NCCL takes every ACTIVE port (src/transport/net_ib.cc ncclIbInit skips a port whose state is
    not IBV_PORT_ACTIVE) and gives each GPU its closest NICs (src/graph/search.cc
    ncclTopoSelectNets by path type), those of its own CPU (NUMA node): through the C2C link
    that is P2C from 2.27 (src/graph/paths.cc), the other CPU's are SYS. So on a NUMA node whose
    GPUs outnumber its active ports of the compute model, each of its down ports of that model is
    a rail its GPUs lost. GPU NUMA affinity from nvidia-smi topo -m, the NIC's numa_node from
    sysfs (pci.nics); either unread decides nothing."""
    topo, nics = inputs.get("gpu.topo"), inputs.get("pci.nics")
    if topo is None or nics is None or topo.status != OK or nics.status != OK or not isinstance(topo.value, dict):
        return set()
    node_of = {str(n.get("name")): n.get("numa_node") for n in nics.value or [] if isinstance(n, dict)}
    gpus: Counter = Counter()
    for name, text in (topo.value.get("numa_affinity") or {}).items():
        nodes = _id_list(str(text)) if name.startswith("GPU") else None
        if nodes:
            gpus[frozenset(nodes)] += 1
    lost: set[str] = set()
    for nodes, count in gpus.items():
        local = [p for p in candidates if node_of.get(str(p.get("pci_bdf"))) in nodes]
        if len(local) == len(candidates) and len(gpus) > 1:
            continue  # every NIC on this GPU's node and other GPUs elsewhere: the affinity is not per socket
        active = [p for p in local if _state_name(p) == "ACTIVE"]
        if len(active) < count:
            lost |= {p["name"] for p in local if _state_name(p) != "ACTIVE"}
    return lost
