"""log.host: what pasted host-side output says: ACS and PCIe links (lspci), the kernel command
line (IOMMU), kernel messages, the GPU topology (nvidia-smi topo -m), NVLink, CUDA P2P."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from allreduce_doctor.errors import ParseError
from allreduce_doctor.evidence import signatures
from allreduce_doctor.evidence.lines import Where
from allreduce_doctor.nccl_rules import gdr as nccl_gdr
from allreduce_doctor.parsers import parse
from allreduce_doctor.parsers.kernel import link_flaps
from allreduce_doctor.probes.derive_job import TOPO_RANK

_ACS_RE = re.compile(r"ACSCtl\s*:\s*(.*)$")
_LNK_RE = re.compile(r"Lnk(Sta|Cap)\s*:.*?Speed\s+([\d.]+)GT/s.*?Width\s+x(\d+)(.*)$")
_GPU_NAME_RE = re.compile(r"^\s*GPU\s+\d+\s*:\s*(.*?)\s*\(UUID", re.IGNORECASE)
_P2P_TITLE_RE = re.compile(r"^\s*(?:(Uni|Bi)directional )?P2P=(Enabled|Disabled) (Bandwidth|Latency)")
_NUM_RE = re.compile(r"^\s*\d+(?:\s+\d+(?:\.\d+)?)+\s*$")
P2P_SLOW_RATIO = 0.5  # direct below half the host-staged copy (_p2p_verdict)
# The tool outputs each field of log.host is read from: a check of one field speaks with those lines
# only, not with every host output pasted (`field_sources`, evidence/differential.py _contradicted).
FIELD_TOOLS = {"acs": ("lspci", "pcie_fragment"), "acs_redirect": ("lspci", "pcie_fragment"),
               "pcie_degraded": ("lspci", "pcie_fragment", "kernel_log"), "cmdline": ("proc_cmdline",),
               "kernel_events": ("kernel_log",), "kernel_signals": ("kernel_log",),
               "link_flaps": ("kernel_log",), "topology": ("nvidia_smi_topo",), "nvlink": ("nvidia_smi_nvlink",),
               "cuda_p2p": ("cuda_p2p",), "gpu_models": ("nvidia_smi_nvlink",), "pcie_tree": ("lspci_tree",)}


def _acs_flags(text: str) -> dict:
    return {t[:-1]: t[-1] == "+" for t in text.split() if len(t) > 1 and t[-1] in "+-"}


def _topology(block: dict) -> dict:
    value = block["value"] or {}
    matrix = value.get("matrix") or {}
    gpus = [g for g in matrix if g.startswith("GPU")]
    paths = [cell for g in gpus for col, cell in matrix[g].items() if col != g]
    # A VM's flattened view is the node's rule (gpu.nic_paths, probes/derive_topo.py, from the pasted gpu.topo).
    return {"gpus": len(gpus), "paths": dict(Counter(paths)),
            "gdr_out_of_reach": _gdr_out_of_reach(matrix, value.get("nic_legend") or {}, value.get("gpu_numa_id")),
            "source": block["where"]}


def _gdr_out_of_reach(matrix: dict, legend: dict, grace: dict | None = None) -> list[dict]:
    """GPUs whose nearest NIC is further than NCCL's default GDR level (PXB): NCCL does not use
    GPUDirect RDMA for them unless NCCL_NET_GDR_LEVEL allows it (nccl_rules/gdr.py gdr_on_path;
    graph/paths.cc ncclTopoCheckGdr, "GPU Direct RDMA Disabled ... (distance > PXB)", v2.8.4-1..v2.30.7-1).
    nvidia-smi's PHB, NODE and SYS all cross a host bridge or the CPU; NV# links join GPUs, not NICs.
    A Grace GPU (a GPU NUMA ID: C2C-attached) sees every NIC as SYS, yet NCCL >= 2.27 keeps GDR
    through C2C (P2C): not judged here."""
    out: list = []
    cells: set = set()
    for gpu, row in matrix.items():
        nics = {col: path for col, path in row.items() if col.startswith("NIC") or col in legend.values()}
        if gpu.startswith("GPU") and nics and gpu not in (grace or {}):
            cells.update(nics.values())
            nearest = min(nics, key=lambda col: TOPO_RANK.get(nics[col], 9))
            if nccl_gdr.gdr_on_path(None, nics[nearest]) is False:
                out.append({"gpu": gpu, "nic": legend.get(nearest, nearest), "path": nics[nearest]})
    # Every GPU-NIC cell PHB is how a VM shows its devices (vm_topology_hidden): no distance to judge.
    return [] if cells == {"PHB"} else out[:16]


def _p2p_bandwidth(lines: list[str], out: dict) -> None:
    """The unidirectional bandwidth matrices of p2pBandwidthLatencyTest: {"enabled"|"disabled": {(i, j): GB/s}}."""
    matrix = None
    for line in lines:
        m = _P2P_TITLE_RE.match(line)
        if m:
            unidirectional = m.group(3) == "Bandwidth" and m.group(1) != "Bi"
            matrix = out.setdefault(m.group(2).lower(), {}) if unidirectional else None
            continue
        cells = line.split()
        if matrix is not None and len(cells) > 2 and cells[0].isdigit() and _NUM_RE.match(line):
            row = int(cells[0])
            for col, value in enumerate(cells[1:]):
                if col != row:
                    matrix[(row, col)] = float(value)


def _p2p_verdict(bandwidth: dict) -> dict:
    """Direct peer copies slower than copies staged through host memory. P2P=Disabled moves each
    byte over PCIe twice (GPU to host memory, host memory to GPU); P2P=Enabled once, GPU to GPU
    (CUDA samples p2pBandwidthLatencyTest). A direct path below half the staged one is throttled
    on the way between the GPUs, not by the links."""
    on, off = bandwidth.get("enabled") or {}, bandwidth.get("disabled") or {}
    pairs = sorted(set(on) & set(off))
    slow = [(i, j) for i, j in pairs if off[(i, j)] > 0 and on[(i, j)] < P2P_SLOW_RATIO * off[(i, j)]]
    if not pairs:
        return {"pairs": 0, "slow_pairs": 0, "slower_than_host": None}
    out: dict[str, Any] = {"pairs": len(pairs), "slow_pairs": len(slow), "slower_than_host": bool(slow)}
    if slow:
        i, j = slow[0]
        out["example"] = f"GPU{i}->GPU{j} {on[(i, j)]:.2f} GB/s direct, {off[(i, j)]:.2f} GB/s through host memory"
    return out


def _pcie(block: dict, acs: list, degraded: list) -> None:
    """ACS and link lines grepped out of lspci (no device named). A whole `lspci -vvv` is the
    node's pci.lspci / pci.nics / pci.gpus (evidence/node_facts.py), judged by the trunk."""
    if block["tool"] == "pcie_fragment":
        for i, line in enumerate(block["lines"] or []):
            where = f"{block['file']}:{block['first'] + i}"
            m = _ACS_RE.search(line)
            if m:
                flags = _acs_flags(m.group(1))
                acs.append({"device": None, "name": None, "flags": flags,
                            "redirect": bool(flags.get("ReqRedir") or flags.get("CmpltRedir")), "source": where})
            m = _LNK_RE.search(line)
            if m and m.group(1) == "Sta" and "downgraded" in m.group(4).lower():
                degraded.append({"device": None, "name": None, "sta": line.strip()[:120], "source": where})


_ENDPOINT_RE = re.compile(r"NVIDIA|Mellanox", re.IGNORECASE)


def _pcie_tree(block: dict) -> dict:
    """GPUs and RDMA NICs that `lspci -tv` shows at a device number other than 0 on a bridge's
    secondary bus. A PCIe root or downstream port links Device 0 only (the kernel scans no other:
    drivers/pci/probe.c only_one_child, "PCIe spec r3.1, sec 7.3.1"), so such an endpoint sits behind
    a conventional PCI bridge, which on a GPU node is a hypervisor's emulated one (QEMU pci-bridge,
    pxb): the text shows a virtual machine. Bridges (a switch's downstream ports) and SR-IOV virtual
    functions (ARI numbers them past device 0) are not counted."""
    devices = block["value"] or []
    odd = [d for d in devices if not d["root"] and d["device"] != 0 and d["bridge"] is None and d["name"]
           and _ENDPOINT_RE.search(d["name"]) and "virtual function" not in d["name"].lower()]
    gpu_roots = {(d["domain"], _root_of(devices, d)) for d in devices if d["name"] and "NVIDIA" in d["name"]}
    return {"devices": len(devices), "behind_pci_bridge": [f"{d['bus']}:{d['slot']} {d['name']}" for d in odd[:8]],
            "virtual": bool(odd), "gpu_root_buses": len(gpu_roots), "source": block["where"]}


def _root_of(devices: list[dict], dev: dict) -> str:
    """The root bus above `dev` (the bridges' secondary buses lead back to it)."""
    parents = {(d["domain"], d["bridge"]): d for d in devices if d["bridge"]}
    seen = 0
    while not dev["root"] and (dev["domain"], dev["bus"]) in parents and seen < 64:
        dev, seen = parents[(dev["domain"], dev["bus"])], seen + 1
    return dev["bus"]


def _kernel(blocks: list[dict], cmdlines: list[tuple[str, str]]) -> tuple[dict | None, dict]:
    cmdline = None
    for text, where in cmdlines:
        body = text.split("=", 1)[1] if text.startswith("GRUB_CMDLINE") else text
        try:
            value = parse("proc_cmdline", body.strip().strip("'\""))
        except ParseError:
            continue
        cmdline = {"iommu": value["iommu"], "iommu_passthrough": value["iommu_passthrough"], "source": where,
                   "value": value}
    events: Counter = Counter()
    rows: list[dict] = []
    first: dict[str, str] = {}
    signals: dict[str, dict] = {}
    for b in blocks:
        if b["tool"] != "kernel_log" or not b["value"]:
            continue
        rows += b["value"]
        for row in b["value"]:
            if row["kind"] != "other":
                events[row["kind"]] += 1
                first.setdefault(row["kind"], b["where"])
            _signal(signals, row["text"], b["where"])
    # the same rule as the node's kernel.events (parsers/kernel.py): one rule for a flap
    return cmdline, {"events": dict(events), "first": first, "flaps": link_flaps(rows), "signals": signals}


def _signal(signals: dict[str, dict], text: str, where: str) -> None:
    """A kernel line the signature table names (a peermem error, an uncorrectable AER, a NIC's fatal
    health event), in the shape of log.nccl.errors: a lone dmesg paste has no other reading that the
    differential ranks (the trunk's checks of these want the node's GPUs and PCI tree)."""
    sig = signatures.match(text)
    if sig is None:
        return
    entry = signals.setdefault(sig.kind, {"count": 0, "blocking": sig.blocking, "first": text[:300], "source": where})
    entry["count"] += 1


def summarize(blocks: list[dict], cmdlines: list[tuple[str, str]]) -> dict:
    acs: list[dict] = []
    degraded: list[dict] = []
    topology = nvlink = p2p = tree = None
    gpu_models: set = set()
    for b in blocks:
        _pcie(b, acs, degraded)
        if b["tool"] == "nvidia_smi_topo" and b["value"] and topology is None:
            topology = _topology(b)
        elif b["tool"] == "lspci_tree" and b["value"] and tree is None:
            tree = _pcie_tree(b)
        elif b["tool"] == "nvidia_smi_nvlink" and b["value"]:
            gpus = b["value"].get("gpus") or {}
            gpu_models.update(g["name"] for g in gpus.values() if g.get("name"))
            links = [v for g in gpus.values() for v in g["links"].values()]
            if b.get("links_listed"):  # nvlink -s (not the GPU list of nvidia-smi -L)
                nvlink = {"gpus": len(gpus), "links": len(links), "inactive": sum(v is None for v in links),
                          "all_inactive": b["value"]["all_inactive"], "speeds": sorted({v for v in links if v is not None}),
                          "source": b["where"]}
        elif b["tool"] == "cuda_p2p":
            lines = b["lines"] or []
            p2p = p2p or {"can": 0, "cannot": 0, "source": b["where"], "bandwidth": {}}
            p2p["can"] += sum("CAN Access" in x and "CANNOT" not in x for x in lines)
            p2p["cannot"] += sum("CANNOT" in x for x in lines)
            _p2p_bandwidth(lines, p2p["bandwidth"])
    if p2p is not None:
        p2p.update(_p2p_verdict(p2p.pop("bandwidth")))
    cmdline, kernel = _kernel(blocks, cmdlines)
    # IOMMU faults and the command line are kernel.dmesg and kernel.cmdline: kernel.iommu_mode judges them (trunk.iommu)
    flaps = kernel["flaps"]
    limited = kernel["events"].get("pcie_bandwidth_limited", 0)
    if limited:
        degraded.append({"device": None, "name": "dmesg: PCIe bandwidth limited", "source": kernel["first"].get(
            "pcie_bandwidth_limited")})
    outputs_of = _field_outputs(blocks, cmdlines)
    # No lspci in the text: whether a bridge redirects is unknown, not "no" (the truth rules)
    redirect = any(a["redirect"] for a in acs) if "acs_redirect" in outputs_of else None
    return {"acs": acs[:64], "acs_redirect": redirect, "pcie_degraded": degraded[:32],
            "field_sources": {field: ", ".join(dict.fromkeys(o["where"] for o in outputs))
                              for field, outputs in outputs_of.items()},
            "cmdline": cmdline, "kernel_events": kernel["events"],
            "kernel_signals": kernel["signals"],
            "link_flaps": flaps, "topology": topology, "nvlink": nvlink, "cuda_p2p": p2p,
            "gpu_models": sorted(gpu_models)[:8], "pcie_tree": tree}


def _field_outputs(blocks: list[dict], cmdlines: list[tuple[str, str]]) -> dict[str, list[dict]]:
    """field -> the first 8 tool outputs it is read from (FIELD_TOOLS): blocks, and a command line as
    {"where": FILE:LINE}; for the fields whose tools the text shows."""
    outputs: dict[str, list[dict]] = {}
    for b in blocks:
        outputs.setdefault(b["tool"], []).append(b)
    for _text, where in cmdlines:
        outputs.setdefault("proc_cmdline", []).append({"where": where})
    found = {field: [o for tool in tools for o in outputs.get(tool, ())][:8] for field, tools in FIELD_TOOLS.items()}
    return {field: got for field, got in found.items() if got}


def field_wheres(blocks: list[dict], cmdlines: list[tuple[str, str]]) -> dict[str, Where]:
    """field -> the lines of the tool outputs it is read from, as a Where (job_summary.py merges them)."""
    out = {}
    for field, outputs in _field_outputs(blocks, cmdlines).items():
        where = out[field] = Where()
        for o in outputs:
            if "file" in o:
                where.add_range(o["file"], o["first"], o["last"])
            else:
                where.add(o["where"])
    return out
