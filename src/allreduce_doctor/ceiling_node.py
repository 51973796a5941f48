"""The parts of the ceiling's topology (ceiling.Topology) that a node's own facts show (issue 28, item 1).

The facts come from a live node or a bundle (sysfs, lspci, nvidia-smi, probes/host.yaml), or from the same tools'
output pasted (evidence/node_facts.py makes the same facts of it):
- the GPUs per node and their names: `nvidia-smi nvlink -s` (gpu.nvlink), `nvidia-smi -q` Product Name
  (gpu.fabric), the NVIDIA GPUs on the PCI bus (pci.gpus);
- each rail NIC's PCIe link, as what it can reach: the lower of the NIC's own capability (sysfs max_link_speed /
  max_link_width, lspci LnkCap) and its slot's (the upstream port's LnkCap), pci.nic_links. A link trains at the
  highest rate both ends support (PCIe base spec), so a Gen5 NIC in a Gen4 slot carries Gen4 by design; a link
  trained below what both ends support is a fault the PCIe step names, not the ceiling. The lowest of the rails'
  links caps them all: each ring leaves the node through one NIC and every ring moves the same bytes, so the
  slowest NIC paces the others (docs/ceilings.md, "Across nodes");
- GPUDirect RDMA: gpu.gdr `usable` false (neither nvidia-peermem nor DMA-BUF) means host staging.
A part none of them shows stays None, and `asks` says what would tell it.
"""

from __future__ import annotations

from allreduce_doctor.ceiling import ANSWER_NIC_PCIE_GEN, ANSWER_NIC_PCIE_WIDTH, table
from allreduce_doctor.observations import Observations

ASK_NIC_PCIE = (f"each NIC's PCIe link: paste `lspci -vvv` of a node (LnkCap, LnkSta), or answer --answer "
                f"{ANSWER_NIC_PCIE_GEN}=5 --answer {ANSWER_NIC_PCIE_WIDTH}=16")


def _value(observations: Observations, fact: str):
    obs = observations.get(fact)
    return obs.value if obs.ok else None


def gpu_names(observations: Observations) -> list[str]:
    """The GPUs' names the node's nvidia-smi shows (nvlink -s, then -q)."""
    nvlink = _value(observations, "gpu.nvlink") or {}
    names = [str(g["name"]) for g in (nvlink.get("gpus") or {}).values() if isinstance(g, dict) and g.get("name")]
    fabric = _value(observations, "gpu.fabric")
    return names + list((fabric or {}).get("names") or []) if isinstance(fabric, dict) else names


def gpus(observations: Observations) -> int | None:
    """How many GPUs the node shows: nvidia-smi's GPU blocks, else the NVIDIA GPUs on its PCI bus."""
    nvlink = _value(observations, "gpu.nvlink")
    fabric = _value(observations, "gpu.fabric")
    pci = _value(observations, "pci.gpus")
    counts = [len((nvlink or {}).get("gpus") or {}) if isinstance(nvlink, dict) else 0,
              len((fabric or {}).get("names") or []) if isinstance(fabric, dict) else 0,
              len(pci) if isinstance(pci, list) else 0]
    return next((c for c in counts if c), None)


def _gen(gts) -> int | None:
    return next((int(g) for g, rate in table()["pcie"].items() if gts is not None and float(rate["gts"]) == float(gts)),
                None)


def _reach(link: dict) -> tuple[int | None, int | None]:
    """(generation, width) a NIC's link can reach: the lower of its own and its slot's capability."""
    speeds = [s for s in (link.get("max_speed_gts"), link.get("slot_speed_gts")) if s]
    widths = [w for w in (link.get("max_width"), link.get("slot_width")) if w]
    speed = min(speeds) if speeds else link.get("current_speed_gts")
    width = min(widths) if widths else link.get("current_width")
    return _gen(speed), (int(width) if width else None)


def nic_pcie(observations: Observations) -> tuple[int | None, int | None, str | None]:
    """(generation, width, where it came from) of the rails' lowest PCIe link; Nones when not read. The rails are
    the ports NCCL uses (rdma.compute_ports); without them every NIC read counts, and only when all agree."""
    links = _value(observations, "pci.nic_links")
    if not isinstance(links, list) or not links:
        return None, None, None
    ports = _value(observations, "rdma.compute_ports")
    rails = {str(p.get("pci_bdf")).lower() for p in ports or [] if isinstance(p, dict) and p.get("pci_bdf")}
    chosen = [x for x in links if str(x.get("name") or "").lower() in rails] if rails else links
    reach = {_reach(x) for x in chosen}
    if not chosen or any(r[0] not in table()["pcie"] or not r[1] for r in reach) or (not rails and len(reach) > 1):
        return None, None, None  # unread, or NICs of several kinds and no telling which carry NCCL
    gen, width = min(reach, key=lambda r: table()["pcie"][r[0]]["raw_gbs"] * (r[1] or 0))
    where = "the rails' PCIe links (sysfs, lspci)" if rails else "the NICs' PCIe links (sysfs, lspci)"
    return gen, width, where


def gdr(observations: Observations) -> bool | None:
    """False when the node can give NCCL no GPUDirect RDMA (gpu.gdr usable false); None otherwise: a node that
    could still may not, by NCCL_NET_GDR_LEVEL or the GPU-NIC distance, and only the log's `/GDRDMA` tells."""
    value = _value(observations, "gpu.gdr")
    return False if isinstance(value, dict) and value.get("usable") is False else None


def parts(observations: Observations) -> dict:
    """{gpus, nic_pcie_gen, nic_pcie_width, nic_pcie_from, gdr} as the node's facts show them."""
    gen, width, where = nic_pcie(observations)
    return {"gpus": gpus(observations), "nic_pcie_gen": gen, "nic_pcie_width": width, "nic_pcie_from": where,
            "gdr": gdr(observations)}
