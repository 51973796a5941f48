"""Tool outputs for the scenario nodes, in the exact formats of tests/fixtures/outputs."""

from __future__ import annotations

from pathlib import Path

from tests.scenarios import nodes as N

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "outputs"


def reference(name: str) -> str:
    """A real output from tests/fixtures/outputs, without its three header lines."""
    text = (REFERENCE / name).read_text()
    return text.split("\n", 3)[3] if text.startswith("# source:") else text


def ibstat(node: N.Node) -> str:
    out = []
    for i in range(node.ports):
        state, phys = node.state.get(i, ("4: ACTIVE", "5: LinkUp"))
        rate = node.rate.get(i, node.base_rate).split()[0]
        roce = N.is_eth(node, i)
        out += [
            f"CA '{N.device(node, i)}'", f"\tCA type: {N.hca_type(node, i)}", "\tNumber of ports: 1", f"\tFirmware version: {node.fw_ver}",
            "\tHardware version: 0", f"\tNode GUID: 0x58a2e10300a782{i:02x}", f"\tSystem image GUID: 0x58a2e10300a782{i:02x}",
            "\tPort 1:", f"\t\tState: {state.split(': ')[1].capitalize()}", f"\t\tPhysical state: {phys.split(': ')[1]}",
            f"\t\tRate: {rate}", f"\t\tBase lid: {0 if roce else 128 + i}", "\t\tLMC: 0", f"\t\tSM lid: {0 if roce else 1}",
            "\t\tCapability mask: 0xa751e848" if not roce else "\t\tCapability mask: 0x00010000",
            f"\t\tPort GUID: 0x{'0e42a1fffe5d4d' if roce else '58a2e10300a782'}{i:02x}",
            f"\t\tLink layer: {'Ethernet' if roce else 'InfiniBand'}",
        ]
    return "\n".join(out) + "\n"


def ibv_devinfo(node: N.Node) -> str:
    out = []
    for i in range(node.ports):
        roce = N.is_eth(node, i)
        active_mtu = ("4096 (5)" if node.netdev_mtu >= 4200 else "1024 (3)") if roce else node.active_mtu
        state, _ = node.state.get(i, ("4: ACTIVE", "5: LinkUp"))
        st = "PORT_ACTIVE (4)" if "ACTIVE" in state else "PORT_DOWN (1)" if "DOWN" in state else "PORT_INIT (2)"
        out += [
            f"hca_id:\t{N.device(node, i)}", "\ttransport:\t\t\tInfiniBand (0)", "\tfw_ver:\t\t\t\t28.41.1000",
            f"\tnode_guid:\t\t\t58a2:e103:00a7:82{i:02x}", "\tvendor_id:\t\t\t0x02c9", "\tvendor_part_id:\t\t\t4129",
            "\thw_ver:\t\t\t\t0x0", "\tboard_id:\t\t\tMT_0000000838", "\tphys_port_cnt:\t\t\t1",
            "\t\tport:\t1", f"\t\t\tstate:\t\t\t{st}", "\t\t\tmax_mtu:\t\t4096 (5)", f"\t\t\tactive_mtu:\t\t{active_mtu}",
            f"\t\t\tsm_lid:\t\t\t{0 if roce else 1}", f"\t\t\tport_lid:\t\t{0 if roce else 128 + i}",
            "\t\t\tport_lmc:\t\t0x00", f"\t\t\tlink_layer:\t\t{'Ethernet' if roce else 'InfiniBand'}",
            "\t\t\tactive_width:\t\t4X (2)", "\t\t\tactive_speed:\t\t100.0 Gbps (128)", "\t\t\tphys_state:\t\tLINK_UP (5)",
        ]
        if roce:
            ll, v4 = f"fe80:0000:0000:0000:0e42:a1ff:fe5d:4d{i:02x}", f"::ffff:10.0.{i + 1}.17"
            out += [f"\t\t\tGID[  0]:\t\t{ll}, RoCE v1", f"\t\t\tGID[  1]:\t\tfe80::e42:a1ff:fe5d:4d{i:02x}, RoCE v2",
                    "\t\t\tGID[  2]:\t\t0000:0000:0000:0000:0000:ffff:0a00:" + f"{i + 1:02x}11, RoCE v1",
                    f"\t\t\tGID[  3]:\t\t{v4}, RoCE v2"]
        else:
            out.append(f"\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:58a2:e103:00a7:82{i:02x}")
        out.append("")
    return "\n".join(out)


DEFAULT_PFC = "0   0   0   1   0   0   0   0"  # mlnx_qos's `enabled` row: PFC on priority 3


def pfc_priorities(node: N.Node, i: int) -> set[int]:
    """The priorities with PFC enabled on port i (what mlnx_qos and dcb print for it)."""
    return {prio for prio, bit in enumerate(node.pfc.get(i, DEFAULT_PFC).split()) if bit == "1"}


def ethtool_stats(node: N.Node, i: int, later: bool, member: int = 0) -> str:
    """mlx5 `ethtool -S`: traffic on node.traffic_prio; pause frames only where that priority has
    PFC enabled on this port. PFC pauses per priority (IEEE 802.1Qbb): a priority without PFC sends
    and counts no PFC frames, so rx/tx_prio<p>_pause stay 0 there; rx/tx_pause_ctrl_phy count the
    port's link-layer pause frames (NVIDIA, "Understanding mlx5 ethtool Counters"), none with PFC
    and global pause both off. A port with PFC off never shows pause frames. Member 1: the second
    bond member of a LAG device, with its own growth (node.lag_growth)."""
    paused = {node.traffic_prio} & pfc_priorities(node, i)
    base = {
        "rx_packets": 920114736201, "tx_packets": 918334120771, "rx_bytes": 3812039947284012,
        "tx_bytes": 3806110238476331, "rx_out_of_buffer": 0, "rx_discards_phy": 0, "tx_discards_phy": 0,
        "rx_crc_errors_phy": 0, "rx_symbol_err_phy": 0, "rx_corrected_bits_phy": 412, "rx_buffer_passed_thres_phy": 0,
        "rx_pause_ctrl_phy": 1802231 if paused else 0, "tx_pause_ctrl_phy": 1733009 if paused else 0,
        "rx_global_pause": 0, "tx_global_pause": 0,
        "tx_pause_storm_warning_events": 0, "tx_pause_storm_error_events": 0,
        "rx_pcs_symbol_err_phy": 0, "link_down_events_phy": 1, "rx_bits_phy": 30496319578272096,
    }
    for prio in range(8):
        on = prio == node.traffic_prio
        base[f"rx_prio{prio}_bytes"] = 3802039947284012 if on else 1048576 * (prio + 1)
        base[f"rx_prio{prio}_packets"] = 917114736201 if on else 1024 * (prio + 1)
        base[f"tx_prio{prio}_bytes"] = 3796110238476331 if on else 1048576 * (prio + 1)
        base[f"tx_prio{prio}_packets"] = 915334120771 if on else 1024 * (prio + 1)
        base[f"rx_prio{prio}_pause"] = 1802231 if prio in paused else 0
        base[f"rx_prio{prio}_pause_duration"] = 90111550 if prio in paused else 0
        base[f"tx_prio{prio}_pause"] = 1733009 if prio in paused else 0
        base[f"tx_prio{prio}_pause_duration"] = 86650450 if prio in paused else 0
    base.update(node.eth_extra)
    p = node.traffic_prio
    if later and node.traffic:
        for name in ("rx_packets", "tx_packets", f"rx_prio{p}_packets", f"tx_prio{p}_packets"):
            base[name] += 2_800_000
        for name in ("rx_bytes", "tx_bytes", f"rx_prio{p}_bytes", f"tx_prio{p}_bytes"):
            base[name] += 11_600_000_000
        base["rx_bits_phy"] += 8 * 11_600_000_000
        if p in paused:
            for name in (f"rx_prio{p}_pause", f"tx_prio{p}_pause", "rx_pause_ctrl_phy", "tx_pause_ctrl_phy"):
                base[name] += 120
    if node.driver == "bnxt":
        base = {_bnxt_name(k): v for k, v in base.items() if _bnxt_name(k)}
    if later:
        for name, delta in (node.lag_growth if member else node.eth_growth).get(i, {}).items():
            base[name] = base.get(name, 0) + delta
    return "NIC statistics:\n" + "".join(f"     {k}: {v}\n" for k, v in base.items())


# mlx5 ethtool -S name -> the bnxt_en one (kernel drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c)
BNXT_ETHTOOL = {"rx_bytes": "rx_bytes", "tx_bytes": "tx_bytes", "rx_packets": "rx_good_frames",
                "tx_packets": "tx_good_frames", "rx_crc_errors_phy": "rx_fcs_err_frames",
                "rx_discards_phy": "rx_stat_discard", "tx_discards_phy": "tx_stat_discard",
                "rx_pause_ctrl_phy": "rx_pfc_frames", "tx_pause_ctrl_phy": "tx_pfc_frames"}
BNXT_PER_PRIO = {"rx_prio{p}_bytes": "rx_bytes_pri{p}", "rx_prio{p}_packets": "rx_packets_pri{p}",
                 "tx_prio{p}_bytes": "tx_bytes_pri{p}", "tx_prio{p}_packets": "tx_packets_pri{p}",
                 "rx_prio{p}_pause": "rx_pfc_ena_frames_pri{p}", "tx_prio{p}_pause": "tx_pfc_ena_frames_pri{p}",
                 "rx_prio{p}_pause_duration": "pfc_pri{p}_rx_duration_us",
                 "tx_prio{p}_pause_duration": "pfc_pri{p}_tx_duration_us"}


def _bnxt_name(mlx5: str) -> str | None:
    if mlx5 in BNXT_ETHTOOL:
        return BNXT_ETHTOOL[mlx5]
    for p in range(8):
        for template, bnxt in BNXT_PER_PRIO.items():
            if template.format(p=p) == mlx5:
                return bnxt.format(p=p)
    return None


def dcb_pfc(node: N.Node, i: int) -> str:
    """iproute2 `dcb -j pfc show dev IF` (the inbox-driver way), PFC on priority 3."""
    enabled = pfc_priorities(node, i)
    return '{"pfc_cap":8,"macsec_bypass":false,"delay":0,"prio_pfc":[' + ",".join(
        str(prio in enabled).lower() for prio in range(8)) + "]}\n"


def dcb_app() -> str:
    """iproute2 `dcb -j app show dev IF`: DSCP trust, DSCP 26 -> priority 3."""
    return '{"default_prio":[0],"dscp_prio":[[24,3],[26,3],[48,6]]}\n'



def mlnx_qos(node: N.Node, i: int) -> str:
    """mlnx_qos -i IF in the tool's own layout (tab-indented rows), DSCP trust, default map."""
    pfc = node.pfc.get(i, DEFAULT_PFC)
    lines = ["DCBX mode: OS controlled", "Priority trust state: dscp", "dscp2prio mapping:"]
    for prio in range(8):
        dscps = ",".join(f"{d:02d}" for d in range(prio * 8 + 7, prio * 8 - 1, -1))
        lines.append(f"\tprio:{prio} dscp:{dscps},")
    lines += [f"Receive buffer size (bytes): {node.buffer_sizes},max_buffer_size=1027728",
              "Cable len: 7", "PFC configuration:", "\tpriority    0   1   2   3   4   5   6   7",
              f"\tenabled     {pfc}", f"\tbuffer      {node.prio2buffer}"]
    for tc in range(8):
        lines += [f"tc: {tc} ratelimit: unlimited, tsa: ets, bw: {50 if tc == 3 else 7 if tc < 7 else 8}%",
                  f"\t priority:  {1 if tc == 0 else 0 if tc == 1 else tc}"]
    return "\n".join(lines) + "\n"


def nvlink_status(gpus: int, inactive: dict | None = None) -> str:
    out = []
    for g in range(gpus):
        out.append(f"GPU {g}: NVIDIA H100 80GB HBM3 (UUID: GPU-5a1f{g:04d}-8c1e-4b52-9d0e-2f3c7a1b{g:04d})")
        down = (inactive or {}).get(g, [])
        out += [f"\t Link {link}: <inactive>" if link in down else f"\t Link {link}: 26.562 GB/s" for link in range(18)]
    return "\n".join(out) + "\n"


def nvidia_smi_q(gpus: int, state: str = "Completed", status: str | None = None) -> str:
    status = status or ("Success" if state == "Completed" else "N/A")
    out = ["", "==============NVSMI LOG==============", "", "Timestamp                                 : Mon Nov 30 09:12:44 2026",
           "Driver Version                            : 550.90.07", "CUDA Version                              : 12.4", "",
           f"Attached GPUs                             : {gpus}"]
    for g in range(gpus):
        out += [f"GPU 00000000:{N.GPU_BUSES[g].upper()}:00.0", "    Product Name                          : NVIDIA H100 80GB HBM3",
                "    Fabric", f"        State                             : {state}",
                f"        Status                            : {status}", ""]
    return "\n".join(out)


_ACS_OFF = "ACSCtl:\tSrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-"
# The ATS capability as pciutils ls-ecaps.c (cap_ats) prints it; ConnectX-7 puts it at 0x480
# (NVIDIA AI Enterprise VM guide, "ATS and ACS configuration", lspci of a ConnectX-7).
_ATS = "\tCapabilities: [480 v1] Address Translation Service (ATS)\n\t\tATSCap:\tInvalidate Queue Depth: 00\n" \
       "\t\tATSCtl:\tEnable{}, Smallest Translation Unit: 00\n"


def lspci_vvv(node) -> str:
    """A switch port above the first GPU, every NIC of the node below its own switch downstream
    port (the real PEX890xx port, its LnkCap at the node's slot speed, its ACS as the node says; the
    real ConnectX-7 entry at that NIC's bus, LnkSta at the speed and width the node's sysfs says, ATS
    as the node says) and the GPU: what `lspci -vvv` shows on that node."""
    from tests.scenarios.nodes import NIC_BUSES

    port = reference("lspci-vvv-pex890xx-switch-port-acs-off.txt").rstrip("\n")
    if node.switch_name:  # another vendor's switch (the real name of the reference's PMC-Sierra bridge)
        port = port.replace("Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)", node.switch_name, 1)
    blocks = [port + "\n"]
    if node.acs_idle_bridge:  # the real redirecting bridge: bus 83 below it holds no GPU or NIC
        blocks.append(reference("lspci-vvv-bridge-acs-redirect-on.txt"))
    if node.root_port_acs:  # the kernel's own ACS request on a root port (pci_request_acs under an IOMMU)
        root = reference("lspci-vvv-bridge-acs-redirect-on.txt").replace("Downstream Port", "Root Port")
        blocks.append(root.replace("82:00.0 PCI bridge: PMC-Sierra Inc. Device 4128", "00:01.0 PCI bridge: Intel Corporation Device 352a")
                      .replace("secondary=83, subordinate=83", "secondary=01, subordinate=ff"))
    acs = _ACS_OFF
    if node.acs_redirect:
        acs = acs.replace("SrcValid- ", "SrcValid+ ").replace("ReqRedir- CmpltRedir- UpstreamFwd-", "ReqRedir+ CmpltRedir+ UpstreamFwd+")
        acs = acs.replace("DirectTrans-", "DirectTrans+") if node.acs_direct_trans else acs
    nic = reference("lspci-vvv-mlx5-cx7-gen5-x16-ok.txt").rstrip("\n")
    if node.nic_ats is not None:
        nic = nic.replace("\tKernel driver in use", _ATS.format("+" if node.nic_ats else "-") + "\tKernel driver in use", 1)
    for i in range(node.ports):
        bus = NIC_BUSES[i]
        up = port.replace("17:01.0 ", f"{0xe0 + i:02x}:01.0 ", 1).replace("secondary=19, subordinate=19", f"secondary={bus}, subordinate={bus}")
        blocks.append(up.replace("Speed 32GT/s, Width x16", f"Speed {node.slot_gts}GT/s, Width x16", 1).replace(_ACS_OFF, acs) + "\n")
        width = node.pci_width.get(i, 16)
        entry = nic.replace("1a:00.0 ", f"{bus}:00.0 ", 1)
        if i in node.nic_numa:  # the NUMA node sysfs gives the NIC (lspci prints the same numa_node)
            entry = entry.replace("\tNUMA node: 0", f"\tNUMA node: {node.nic_numa[i]}", 1)
        if width != 16:
            entry = entry.replace("Width x16 (ok)", f"Width x{width} (downgraded)")
        if node.nic_gts != 32:
            entry = entry.replace("Speed 32GT/s (ok)", f"Speed {node.nic_gts}GT/s (downgraded)")
        blocks.append(entry + "\n")
    return "\n".join([*blocks, reference("lspci-vvv-gpu-h100-gen5.txt")])


def _topo(gpus: int, nics: int, path, affinity, legend=None) -> str:
    """nvidia-smi topo -m in its tab-separated layout, from path(gpu, nic) and affinity(gpu)."""
    names = [f"GPU{g}" for g in range(gpus)] + [f"NIC{n}" for n in range(nics)]
    rows = ["\t" + "\t".join(names + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
    for a in names:
        cells = []
        for b in names:
            if a == b:
                cells.append(" X ")
            elif a.startswith("GPU") and b.startswith("GPU"):
                cells.append("NV18")
            elif a.startswith("NIC") and b.startswith("NIC"):
                cells.append("NODE")
            else:
                g, n = (a, b) if a.startswith("GPU") else (b, a)
                cells.append(path(int(g[3:]), int(n[3:])))
        tail = [*affinity(int(a[3:])), "N/A"] if a.startswith("GPU") else []
        rows.append("\t".join([a] + cells + tail))
    rows += ["", "Legend:", "", "  X    = Self", "  SYS  = Connection traversing PCIe as well as the SMP interconnect",
             "  PIX  = Connection traversing at most a single PCIe bridge", "", "NIC Legend:", ""]
    rows += [f"  NIC{n}: {(legend or {}).get(n, f'mlx5_{n}')}" for n in range(nics)]
    return "\n".join(rows) + "\n"


def topo_remote_nics() -> str:
    """NICs 4-7 absent: GPUs 4-7 reach a NIC only across the CPU interconnect (SYS)."""
    return _topo(8, 4, lambda g, n: "PIX" if g == n else "NODE" if g < 4 else "SYS",
                 lambda g: ("0-47,96-143", "0") if g < 4 else ("48-95,144-191", "1"))


def topo_gds(node: N.Node) -> str:
    """An HGX with GPUDirect Storage HCAs: each compute NIC PIX to its GPU, storage HCA k (node.gds)
    under the PCIe switch of GPUs 2k and 2k+1, PIX to both (GDS design guide: storage NICs near the GPUs)."""
    storage = {n: k for k, n in enumerate(node.gds)}

    def path(g, n):
        if n in storage:
            return "PIX" if g // 2 == storage[n] else "NODE" if (g < 4) == (storage[n] < 2) else "SYS"
        return "PIX" if g == n else "NODE" if (g < 4) == (n < 4) else "SYS"

    return _topo(node.gpus, node.ports, path, lambda g: ("0-55,112-167", "0") if g < 4 else ("56-111,168-223", "1"),
                 {n: N.device(node, n) for n in range(node.ports)})


def topo_pxb(gpus: int = 8) -> str:
    """Each GPU's NIC two PCIe switches away (PXB): a GPU and its NIC under different switches below
    one host bridge (nvidia-smi legend: "traversing multiple PCIe bridges")."""
    return _topo(gpus, gpus, lambda g, n: "PXB" if g == n else "NODE" if (g < 4) == (n < 4) else "SYS",
                 lambda g: ("0-47,96-143", "0") if g < 4 else ("48-95,144-191", "1"))


def topo_gb200(nics: int = 8) -> str:
    """A GB200 compute tray's nvidia-smi topo -m: 4 GPUs (NV18), every GPU-NIC cell SYS, two Grace
    CPUs (affinity 0-71, 72-143) and a GPU NUMA ID per GPU, as a real tray prints it
    (sgl-project/sglang#11208, driver 570.172.08, 6 NICs); 8 NICs here as the DGX GB200 user guide
    lists them (4 ConnectX-7 + 2 dual-port BlueField-3)."""
    names = [f"GPU{g}" for g in range(4)] + [f"NIC{n}" for n in range(nics)]
    numa = {0: ("0-71", "0,3-9,11-17", "2"), 1: ("0-71", "0,3-9,11-17", "10"),
            2: ("72-143", "1,19-25,27-33", "18"), 3: ("72-143", "1,19-25,27-33", "26")}
    rows = ["\t" + "\t".join(names + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
    for a in names:
        cells = [" X " if a == b else "NV18" if a[:3] == b[:3] == "GPU" else "NODE" if a[:3] == b[:3] == "NIC"
                 else "SYS" for b in names]
        rows.append("\t".join([a, *cells, *(numa[int(a[3:])] if a.startswith("GPU") else ())]))
    rows += ["", "Legend:", "", "  X    = Self", "  SYS  = Connection traversing PCIe as well as the SMP interconnect",
             "  NV#  = Connection traversing a bonded set of # NVLinks", "", "NIC Legend:", ""]
    rows += [f"  NIC{n}: mlx5_{n}" for n in range(nics)]
    return "\n".join(rows) + "\n"


def topo_vm(gpus: int = 8) -> str:
    """A VM's flattened view: every GPU-NIC pair behind the host bridge (PHB), all CPUs."""
    return _topo(gpus, gpus, lambda g, n: "PHB", lambda g: ("0-95", "0"))


def topo_with_storage(node: N.Node) -> str:
    """Each compute NIC PIX to its GPU; the storage cards on the CPU's root ports (NODE to the
    GPUs of their socket, SYS to the others), as on a DGX H100."""
    def path(g, n):
        if n in node.storage:
            return "NODE" if (g < 4) == (N.NIC_BUSES[n] < "80") else "SYS"
        return "PIX" if g == n else "NODE" if (g < 4) == (n < 4) else "SYS"

    return _topo(node.gpus, node.ports, path, lambda g: ("0-55,112-167", "0") if g < 4 else ("56-111,168-223", "1"),
                 {n: N.device(node, n) for n in range(node.ports)})


# The switch side of an IB port (brief peer, review MF-8), as infiniband-diags prints it: libibmad
# _mad_dump_field() pads each `Name:` with dots to 32 columns (libibmad/fields.c); headers from
# smpquery.c node_info()/port_info() and perfquery.c dump_perfcounters(). One Quantum-2 leaf
# switch per rail; port i of the host is cabled to the leaf's port 17 + i.
PEER_LID = 12
# The switch port's own history (absolute values that do not move): not a fault.
PEER_COUNTERS = {"SymbolErrorCounter": 3, "LinkErrorRecoveryCounter": 0, "LinkDownedCounter": 1,
                 "PortRcvErrors": 0, "PortRcvRemotePhysicalErrors": 0, "PortRcvSwitchRelayErrors": 0,
                 "PortXmitDiscards": 0, "PortXmitConstraintErrors": 0, "PortRcvConstraintErrors": 0,
                 "CounterSelect2": "0x00", "LocalLinkIntegrityErrors": 0, "ExcessiveBufferOverrunErrors": 0,
                 "VL15Dropped": 0, "PortXmitData": 4294967295, "PortRcvData": 4294967295,
                 "PortXmitPkts": 4294967295, "PortRcvPkts": 4294967295, "PortXmitWait": 1838211}
_PERFQUERY_NAMES = {"symbol_error": "SymbolErrorCounter", "link_error_recovery": "LinkErrorRecoveryCounter",
                    "link_downed": "LinkDownedCounter", "port_rcv_errors": "PortRcvErrors"}


def _mad(lines: dict) -> str:
    return "".join(f"{name}:{'.' * (32 - len(name))}{value}\n" for name, value in lines.items())


def peer_port(i: int) -> int:
    return 17 + i


def smp_nodeinfo(i: int) -> str:
    guid = f"0xfc6a1c0300e1{i:04x}"
    return "# Node info: DR path slid 0; dlid 0; 0,1\n" + _mad({
        "BaseVers": 1, "ClassVers": 1, "NodeType": "Switch", "NumPorts": 65, "SystemGuid": guid, "Guid": guid,
        "PortGuid": guid, "PartCap": 32, "DevId": "0xd2f2", "Revision": "0x000000a1", "LocalPort": peer_port(i),
        "VendorId": "0x0002c9"})


def smp_portinfo(i: int, lid: int = PEER_LID) -> str:
    return "# Port info: DR path slid 0; dlid 0; 0,1 port 0\n" + _mad({
        "Mkey": "<not displayed>", "GidPrefix": "0xfe80000000000000", "Lid": lid + i, "SMLid": 1,
        "CapMask": "0x4250c848", "DiagCode": "0x0000", "MkeyLeasePeriod": 0, "LocalPort": peer_port(i),
        "LinkWidthEnabled": "1X or 4X", "LinkWidthSupported": "1X or 4X", "LinkWidthActive": "4X",
        "LinkSpeedSupported": "2.5 Gbps or 5.0 Gbps or 10.0 Gbps", "LinkState": "Active",
        "PhysLinkState": "LinkUp", "LMC": 0})


def _peer_counters(node: N.Node, i: int, later: bool) -> dict:
    counters = dict(PEER_COUNTERS)
    if later and node.traffic:
        counters["PortXmitWait"] += 38_000
    for name, delta in (node.peer_growth.get(i, {}) if later else {}).items():
        counters[_PERFQUERY_NAMES[name]] += delta
    return counters


def perfquery(node: N.Node, i: int, later: bool) -> str:
    counters = _peer_counters(node, i, later)
    for name in node.peer_pinned16:  # 16-bit PortCounters of a long-lived switch port, saturated
        counters[name] = 65535
    return f"# Port counters: Lid {PEER_LID + i} port {peer_port(i)} (CapMask: 0x5A00)\n" + _mad(
        {"PortSelect": peer_port(i), "CounterSelect": "0x0000", **counters})


def peer_commands(node: N.Node, later: bool) -> dict:
    """smpquery and perfquery of every active IB port's peer; as non-root each fails as libibmad
    does when /dev/infiniband/umad* cannot be opened (rpc.c, ibdiag_common.c ibexit())."""
    from tests.scenarios.tools_link import local_portinfo, peer_portinfo, perfquery_ext

    commands = {}
    for i in range(node.ports):
        if node.state.get(i, ("4: ACTIVE",))[0] != "4: ACTIVE" or N.is_eth(node, i):
            continue
        dev = N.device(node, i)
        local = ("-C", dev, "-P", "1")
        answers = {("smpquery", *local, "-D", "nodeinfo", "0,1"): smp_nodeinfo(i),
                   ("smpquery", *local, "-D", "portinfo", "0,1"): smp_portinfo(i),
                   ("perfquery", *local, str(PEER_LID + i), str(peer_port(i))): perfquery(node, i, later),
                   ("perfquery", "-x", *local, str(PEER_LID + i), str(peer_port(i))): perfquery_ext(node, i, later),
                   ("smpquery", *local, "-D", "portinfo", "0", "1"): local_portinfo(node, i),
                   ("smpquery", *local, "-D", "portinfo", "0,1", str(peer_port(i))): peer_portinfo(node, i)}
        for argv, text in answers.items():
            commands[argv] = text if node.root else (
                255, f"{argv[0]}: iberror: failed: Failed to open '{dev}' port '1'\n",
                f"ibwarn: [48213] mad_rpc_open_port2: can't open UMAD port ({dev}:1)\n")
    return commands
