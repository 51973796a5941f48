"""What the text leaves open: candidates of the ranked differential (evidence/differential.py) that come
from the situation the text shows rather than from a signature: ports at a rate their adapter may not
be, ports or netdevs that are down, a virtual machine's PCI tree, GPUs beyond GPUDirect RDMA reach, a
slow job whose NCCL lines never name their network. Each is (cause, the line that raises it, the paste
that decides it)."""

from __future__ import annotations


def unrated_ports(ports: list | None) -> list[tuple[str, str, str]]:
    """IB ports at EDR or slower whose adapter the text does not name: an HDR/NDR adapter trained
    low looks the same (IBTA speeds: EDR 25, HDR 50, NDR 100 Gb/s a lane; NVIDIA/nccl#307)."""
    slow = [p for p in ports or [] if p.get("link_layer") == "InfiniBand" and not p.get("hca_type")
            and (p.get("state") or {}).get("name") in (None, "ACTIVE")  # a down port trained at nothing
            and (p.get("rate") or {}).get("speed") in ("SDR", "DDR", "QDR", "FDR10", "FDR", "EDR")]
    if not slow:
        return []
    names = ", ".join(p["name"] for p in slow[:4])
    return [("link_degraded", f"{slow[0].get('source')}: {names} at {slow[0]['rate'].get('gbps')} Gb/s "
             f"({slow[0]['rate'].get('speed')}), adapter model not shown",
             "paste `ibv_devinfo -v` or `lspci -vv` of the adapters: their model says the rate they should train at")]


def gdr_out_of_reach(job: dict | None, symptom: str | None) -> list[tuple[str, str, str]]:
    """GPUs a pasted `nvidia-smi topo -m` puts beyond NCCL's default GPUDirect RDMA distance (PXB),
    when no NET line says what NCCL chose: their NIC traffic is staged through host memory
    (evidence/host.py gdr_out_of_reach, graph/paths.cc ncclTopoCheckGdr). A cost in bandwidth,
    so a candidate when the reporter saw slowness or said nothing, never beside a hang or an error."""
    gdr = (job or {}).get("gdr") or {}
    far = gdr.get("out_of_reach") or []
    if not far or symptom not in (None, "slow"):
        return []
    names = ", ".join(f"{g['gpu']} ({g['path']} to {g['nic']})" for g in far[:4])
    return [("gdr_disabled", f"{gdr.get('topology_source')}: {names}: nearest NIC beyond PXB, NCCL's default "
             "NCCL_NET_GDR_LEVEL, so no GPUDirect RDMA for them", _paste("gdr_disabled"))]


def transport_unseen(nccl: dict | None, job: dict | None, symptom: str | None,
                     context_kinds: set[str]) -> list[tuple[str, str, str]]:
    """A slow job whose NCCL lines never say which network it chose: NCCL falls back to TCP sockets
    without a warning when it cannot use a verbs device (net.cc / init.cc print `Using network
    Socket` at INFO only; net_ib.cc `NET/IB : No device found` at INFO), and whether its NET
    connections carry /GDRDMA is only in INFO channel lines. The first two questions of a slow job; the
    text tells neither from the other, so both get the one paste that answers both; none when the job
    failed on something (that explains it)."""
    nccl, job = nccl or {}, job or {}
    if symptom != "slow" or not (_nccl_runs(nccl, context_kinds) or nccl.get("version")) or nccl.get("network") \
            or nccl.get("transports") or job.get("scope") == "intra" or job.get("blocking_errors") \
            or (job.get("gdr") or {}).get("state") != "unknown":
        return []
    source = (nccl.get("sources") or {}).get("version") or "the NCCL lines"
    paste = ("paste NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET of one rank: `Using network Socket` (or `NET/IB : No "
             "device found`) is socket_fallback; `Using network IB` and `NET/IB : Using` with no `via NET/IB/N/GDRDMA` "
             "in the channel lines is gdr_disabled")
    return [("socket_fallback", f"{source}: NCCL runs, and no line says which network it chose", paste),
            ("gdr_disabled", f"{source}: NCCL runs, and no NET channel line shows /GDRDMA", paste)]


def down_ports(ports: list | None) -> list[tuple[str, str, str]]:
    """Ports of the rails' model that are not ACTIVE when the text does not say which ports are the
    rails (the walk leaves `Every compute port is ACTIVE` unknown: a down port may be a storage port).
    NCCL skips a port that is not ACTIVE (net_ib.cc ncclIbInit `if (portAttr.state != IBV_PORT_ACTIVE)
    continue`, v2.4.8-v2.21.5; net_ib/init.cc v2.30.7), so if it is a rail its GPUs lose their NIC."""
    down = [p for p in ports or [] if p.get("rail") is None and (p.get("state") or {}).get("name")
            and p["state"]["name"] != "ACTIVE" and not (p["state"]["name"] == "INIT"
                                                        and (p.get("phys_state") or {}).get("name") == "LinkUp")]
    if not down:
        return []
    names = ", ".join(_port_state(p) for p in down[:4])
    beside = ", beside ACTIVE ports of the same model" if len(down) < len(ports or []) else ""
    return [("ib_port_down", f"{down[0].get('source')}: {names}{beside}",
             "paste NCCL's `NET/IB : Using` line or the job's NCCL_IB_HCA: a down port among them is a lost rail")]


def down_netdevs(job: dict | None) -> list[tuple[str, str, str]]:
    """ibdev2netdev netdevs without carrier whose port the text does not show (rdma.py down_netdevs):
    the port may be down (a RoCE port is, an IPoIB one may be ACTIVE), so a candidate until ibstat says."""
    down = (job or {}).get("down_netdevs") or []
    if not down:
        return []
    names = ", ".join(f"{n['device']} port {n['port']} ==> {n['netdev']} (Down)" for n in down[:4])
    return [("ib_port_down", f"{down[0].get('source')}: {names}: no carrier on the port's netdev",
             f"paste `ibstat {down[0]['device']}` (the port's State and Physical state): a RoCE port is down with its "
             "netdev; an IPoIB netdev can be Down with its port ACTIVE (not yet joined to the broadcast group, or "
             "set down)")]


def virtual_machine(job: dict | None) -> list[tuple[str, str, str]]:
    """A pasted PCI tree that shows a virtual machine (evidence/host.py _pcie_tree). In a VM, GPUDirect
    RDMA needs ATS on the NIC and the host's switch and root ports' ACS set to let ATS through (NVIDIA
    AI Enterprise, "Optimizing VM configuration", appendix "ATS and ACS configuration"); a VM whose GPUs
    all hang off one root bus may instead hide the PCIe/NUMA layout from NCCL (vm_topology_hidden).
    GPUs under several root buses keep the host's grouping, so ACS/ATS comes first there. The PCI tree does
    not tell the two apart; the VM's `nvidia-smi topo -m` does: every GPU-NIC pair at PHB is the flattened
    view (runbooks/trunk.yaml vm_topology), PIX/PXB pairs are the real switches, where ACS/ATS decides."""
    tree = (job or {}).get("virtual_pcie")
    if not tree:
        return []
    line = (f"{tree['source']}: {tree['behind_pci_bridge'][0]} at a device number other than 0 behind a bridge "
            "(a PCIe port links device 0 only): an emulated PCI bridge, a virtual machine")
    step = ("paste `nvidia-smi topo -m` inside the VM: every GPU-NIC pair at PHB is vm_topology_hidden (and the "
            "job's NCCL_TOPO_FILE); pairs at PIX or PXB show the real switches: then `lspci -vvv` of the NICs and of "
            "the bridges above them on the host (ACSCtl, ATSCtl) and `mlxconfig -d DEV q ATS_ENABLED` decide "
            "pcie_acs_enabled")
    acs, hidden = ("pcie_acs_enabled", line, step), ("vm_topology_hidden", line, step)
    return [acs, hidden] if tree.get("gpu_root_buses", 0) > 1 else [hidden, acs]


def acs_unplaced(host: dict | None, lspci_pasted: bool) -> list[tuple[str, str, str]]:
    """ACSCtl lines grepped out of lspci that redirect (ReqRedir+ or CmpltRedir+) without the devices they
    belong to: only a switch port above a GPU or NIC matters (NCCL troubleshooting guide, "PCI Access
    Control Services"), a root port redirects by default under an IOMMU (pci_request_acs(), drivers/iommu/
    intel/dmar.c and amd/init.c), so the node's rule (pci.acs, probes/derive.py) needs the whole lspci -vvv.
    With it pasted, trunk.acs decides; without, pcie_acs_enabled stays open with that paste."""
    acs = [a for a in (host or {}).get("acs") or [] if a.get("redirect")]
    if not acs or lspci_pasted:
        return []
    lines = ", ".join(dict.fromkeys(str(a.get("source")) for a in acs[:8]))
    return [("pcie_acs_enabled", f"{lines}: ACSCtl redirects (ReqRedir+ or CmpltRedir+) on a device the text does not name",
             "paste the whole `lspci -vvv` to tell a switch port above a GPU or NIC (ACS there is the fault) from a "
             "root port (redirect there is the kernel's default under an IOMMU)")]


def _paste(cause: str) -> str:
    """The catalogue's one paste that decides `cause` (runbooks/catalogue/causes.yaml `paste`)."""
    from allreduce_doctor.runbook.causes import CAUSES

    return CAUSES[cause].paste


def _nccl_runs(nccl: dict, context_kinds: set[str]) -> bool:
    """Whether the text shows NCCL running: lines that only name the context (a plugin's path in prose, a
    frame) do not."""
    context = sum(e.get("count", 0) for k, e in (nccl.get("errors") or {}).items() if k in context_kinds)
    return (nccl.get("lines") or 0) > context


def _port_state(port: dict) -> str:
    """'mlx5_1/1 DOWN (Disabled)'; the physical state only when the text shows it."""
    phys = (port.get("phys_state") or {}).get("name")
    return f"{port['name']} {port['state']['name']}" + (f" ({phys})" if phys else "")


def hang_on_one_host(nccl: dict | None, job: dict | None, symptom: str | None,
                     context_kinds: set[str]) -> list[tuple[str, str, str]]:
    """A hang of a job the text shows on one host, with NCCL running and nothing failing: GPU peer traffic
    redirected to the CPU root complex. NCCL troubleshooting, PCI Access Control Services (ACS): IO
    virtualization (VT-d or IOMMU) "can interfere with GPU Direct by redirecting all PCI point-to-point
    traffic to the CPU root complex, causing a significant performance reduction or even a hang", and ACS on
    PCI switches must be disabled; NVIDIA/nccl#199 (maintainer: disable ACS, or VT on AMD CPUs)."""
    nccl, job = nccl or {}, job or {}
    if symptom != "hang" or job.get("scope") != "intra" or job.get("blocking_errors") \
            or not _nccl_runs(nccl, context_kinds):
        return []
    sources = nccl.get("sources") or {}
    source = sources.get("channels") or sources.get("ranks") or sources.get("version") or "the NCCL lines"
    line = f"{source}: every rank on one host, and no NCCL line failed before the hang"
    return [("pcie_acs_enabled", line, "paste `lspci -vvv | grep -e ACSCtl -e '^[0-9a-f]'` (the bridges above the "
             "GPUs: `SrcValid+` is ACS on), or retry with NCCL_P2P_DISABLE=1 and say whether it still hangs"),
            ("iommu_enabled", line, _paste("iommu_enabled"))]
