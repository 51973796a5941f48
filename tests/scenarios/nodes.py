"""Realistic H100 nodes as FakeHosts, built from the real outputs in tests/fixtures/outputs.

An InfiniBand node: 8 x ConnectX-7 (MT4129, fw 28.41.1000) at 400 Gb/sec (4X NDR), counter
values from the gpud H100 sysfs fixture. A RoCE node: 8 x ConnectX-7 400GbE, DSCP trust,
PFC on priority 3, ECN on, NCCL_IB_TC=106 (DSCP 26 -> priority 3), mlx5 GID layout (each
address twice: v1 then v2). Faults are small edits of these models (see build.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

IB = "/sys/class/infiniband"
PCI = "/sys/bus/pci/devices"
NIC_BUSES = ["1a", "3c", "4d", "5d", "9b", "bb", "cb", "db", "29", "2a", "a9", "aa"]  # the last 4: storage cards
# DGX H100 names (DGX H100 user guide 1.2.3, docs/sysfs-layout.md section 6): compute rails
# mlx5_0/3/4/5/6/9/10/11, the two dual-port storage ConnectX-7 cards mlx5_1/2/7/8.
DGX_DEVICES = ("mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11",
               "mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8")
OPEN_DRIVER = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.90.07  Release Build  "
               "(dvs-builder@U16-I3-B03-4-3)  Fri May 31 09:30:47 UTC 2024\nGCC version:  gcc version 12.3.0\n")
PROPRIETARY_DRIVER = ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024\n"
                      "GCC version:  gcc version 12.3.0\n")
GPU_BUSES = ["19", "2b", "3b", "5e", "9d", "ad", "bd", "dd"]

# From the gpud H100 fixture (tests/fixtures/outputs/sysfs-class-infiniband-cx7-ndr-ib-port.txt).
IB_COUNTERS = {
    "VL15_dropped": 0, "excessive_buffer_overrun_errors": 0, "link_downed": 0, "link_error_recovery": 0,
    "local_link_integrity_errors": 0, "multicast_rcv_packets": 0, "multicast_xmit_packets": 0,
    "port_rcv_constraint_errors": 0, "port_rcv_data": 230539874932483, "port_rcv_errors": 14,
    "port_rcv_packets": 317548853677, "port_rcv_remote_physical_errors": 0, "port_rcv_switch_relay_errors": 1,
    "port_xmit_constraint_errors": 0, "port_xmit_data": 230442669431839, "port_xmit_discards": 0,
    "port_xmit_packets": 315487941081, "port_xmit_wait": 2489603687, "symbol_error": 0,
    "unicast_rcv_packets": 317548853677, "unicast_xmit_packets": 315487941081,
}
HW_COUNTERS = {
    "duplicate_request": 0, "implied_nak_seq_err": 0, "lifespan": 12, "local_ack_timeout_err": 0,
    "out_of_buffer": 0, "out_of_sequence": 0, "packet_seq_err": 0, "req_cqe_error": 0,
    "req_cqe_flush_error": 0, "req_remote_access_errors": 0, "req_remote_invalid_request": 0,
    "resp_cqe_error": 0, "resp_cqe_flush_error": 0, "resp_local_length_error": 0,
    "resp_remote_access_errors": 0, "rnr_nak_retry_err": 0, "roce_adp_retrans": 3, "roce_adp_retrans_to": 0,
    "roce_slow_restart": 0, "roce_slow_restart_cnps": 0, "roce_slow_restart_trans": 0,
    "rx_atomic_requests": 0, "rx_dct_connect": 0, "rx_read_requests": 2076, "rx_write_requests": 3809045607,
}
ROCE_CC_COUNTERS = {"np_cnp_sent": 18233, "np_ecn_marked_roce_packets": 19012, "rp_cnp_handled": 17640,
                    "rp_cnp_ignored": 0, "rx_icrc_encapsulated": 0}
# A Broadcom BCM57508 RoCE port: bnxt_re hw_counters (kernel drivers/infiniband/hw/bnxt_re/hw_counters.c).
BNXT_HW_COUNTERS = {
    "active_qps": 66, "active_cqs": 70, "active_mrs": 412, "rx_pkts": 917114736201, "rx_bytes": 3802039947284012,
    "tx_pkts": 915334120771, "tx_bytes": 3796110238476331, "recoverable_errors": 0, "rx_roce_errors": 0,
    "rx_roce_discards": 0, "to_retransmits": 0, "seq_err_naks_rcvd": 0, "max_retry_exceeded": 0,
    "rnr_naks_rcvd": 0, "missing_resp": 0, "dup_req": 0, "oos_drop_count": 0, "tx_cnp_pkts": 18233,
    "rx_cnp_pkts": 17640, "rx_ecn_marked_pkts": 19012, "rx_out_of_buffer": 0,
}
SECOND_SAMPLE_TRAFFIC = {"port_xmit_data": 2_900_000_000, "port_rcv_data": 2_900_000_000,
                         "port_xmit_packets": 2_800_000, "port_rcv_packets": 2_800_000,
                         "port_xmit_wait": 41_000, "rx_write_requests": 2_750_000,
                         "rx_pkts": 2_800_000, "tx_pkts": 2_800_000, "rx_bytes": 11_600_000_000,
                         "tx_bytes": 11_600_000_000}
CNP_GROWING = ("np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled", "tx_cnp_pkts", "rx_cnp_pkts",
                "rx_ecn_marked_pkts")


@dataclass
class Node:
    """What varies between scenarios; defaults are a healthy node."""

    fabric: str = "ib"  # "ib" or "roce"
    ports: int = 8
    gpus: int = 8
    state: dict = field(default_factory=dict)  # port index -> ("1: DOWN", "2: Polling")
    rate: dict = field(default_factory=dict)  # port index -> "200 Gb/sec (2X NDR)"
    counter_growth: dict = field(default_factory=dict)  # port index -> {counter: delta}
    eth_growth: dict = field(default_factory=dict)  # port index -> {ethtool counter: delta}
    pci_width: dict = field(default_factory=dict)  # nic index -> current width
    gpu_width: dict = field(default_factory=dict)  # gpu index -> current width (default 16)
    peermem: bool = True
    pfc: dict = field(default_factory=dict)  # port index -> "0 0 0 0 0 0 0 0"
    ecn: dict = field(default_factory=dict)  # port index -> {prio: 0/1} overrides for np and rp
    env: dict = field(default_factory=dict)  # overrides of the job environment (None removes)
    job: bool = True
    netdev_mtu: int = 9000
    cmdline: str = "BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=UUID=4f1c ro iommu=pt quiet"
    hostname: str = "gpu-node-017"
    hca_type: str = "MT4129"  # ConnectX-7; MT4123 (ConnectX-6) for a 200G HDR node
    fw_ver: str = "28.41.1000"
    base_rate: str = "400 Gb/sec (4X NDR)"
    verbs: bool = True  # libibverbs in the job's image (/proc/PID/root)
    provider: bool = True  # the NICs' verbs provider (libmlx5, libbnxt_re) in the job's image
    uverbs: bool = True  # /dev/infiniband/uverbs* visible
    dmi: tuple = ("Supermicro", "SYS-821GE-TNHR")
    netdevs: tuple = ("lo", "bond0", "docker0")  # other interfaces of the node
    topo: str | None = None  # an nvidia-smi topo -m text replacing the reference one
    nvlink_inactive: dict = field(default_factory=dict)  # gpu -> [link numbers]
    fabric_state: str = "Completed"
    active_mtu: str = "4096 (5)"  # IB ports (RoCE derives it from the netdev MTU)
    acs_redirect: bool = False  # the switch ports above the NICs have ACS ReqRedir+ CmpltRedir+
    acs_direct_trans: bool = False  # ... with DirectTrans+ (ACS Direct Translated P2P)
    nic_ats: bool | None = None  # the NICs' ATS capability: True Enable+, False Enable-, None not shown
    acs_idle_bridge: bool = False  # a bridge with ACS redirect on and no GPU or NIC below it
    gid_extra_ipv6: tuple = ()  # port indexes with an extra global IPv6 address before the IPv4 one
    gid_vlan: tuple = ()  # port indexes whose IPv4 address is on a VLAN of the netdev (<netdev>.100)
    traffic: bool = True  # counters move between the samples (False: an idle node)
    static_counters: dict = field(default_factory=dict)  # counter -> a high value that does not move
    traffic_prio: int = 3  # the priority RoCE traffic lands on
    pinned: dict = field(default_factory=dict)  # counter -> a saturated value held in both samples
    gone_later: dict = field(default_factory=dict)  # port index -> counters missing from the second sample
    driver: str = "mlx5"  # the NIC driver: "bnxt": Broadcom bnxt_re/bnxt_en counter names, dcb instead of mlnx_qos
    devices: tuple = ()  # device names by port index (default mlx5_<i>); DGX_DEVICES for a DGX
    storage: tuple = ()  # port indexes of storage cards: no GPU under their PCIe switch (NODE/SYS)
    gpu_driver: str = OPEN_DRIVER  # /proc/driver/nvidia/version
    nccl_lib: str = "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5"  # the libnccl the job maps
    global_tclass: int | None = None  # MLNX_OFED tc/1/traffic_class ("Global tclass=N"); None: unset
    fabric_status: str | None = None  # Fabric Manager Status (default: Success when Completed)
    kernel: str = "6.8.0-45-generic"
    iommu_type: str | None = "identity"  # /sys/bus/pci/devices/BDF/iommu_group/type (None: no IOMMU group)
    nic_gts: int = 32  # the NICs' current PCIe speed (ConnectX-7: Gen5, 32 GT/s)
    slot_gts: int = 32  # the LnkCap speed of the switch port above each NIC
    peer_growth: dict = field(default_factory=dict)  # port index -> {counter: delta} at the switch port (perfquery)
    root: bool = True  # the tool runs as root (False: umad is closed, smpquery/perfquery fail)
    root_port_acs: bool = False  # a root port with ACS redirect on (the kernel's default under an IOMMU)
    # brief roce (issue 13: MF-10, C-2, C-3)
    eth_extra: dict = field(default_factory=dict)  # ethtool -S counters present in both samples (PCIe stall ...)
    prio2buffer: str = "0   0   0   1   0   0   0   0"  # mlnx_qos `buffer` row
    buffer_sizes: str = "130944,130944,0,0,0,0,0,0"  # mlnx_qos receive buffer sizes
    cnp_dscp: int | None = None  # MLNX_OFED ecn/roce_np/cnp_dscp (and cnp_802p_prio 6); None: no files
    bnxt_cc: tuple | None = None  # bnxt_re debugfs cc_config (enable_cc, tos_ecn); None: not readable
    lag: bool = False  # each RoCE device is a LAG (mlx5_bond_N) over two bonded ports: a second member netdev
    lag_growth: dict = field(default_factory=dict)  # port index -> ethtool -S growth on the second member
    # node-side job environment, libraries and kernel log (brief node: FA-6, MF-6, MF-7)
    host_verbs: bool = True  # libibverbs and the provider in this tool's own filesystem (the host)
    verbs_loaded: bool = True  # the job has mapped what its image holds (NCCL initialized)
    job_files: dict = field(default_factory=dict)  # path inside the job's root -> text (nccl.conf files)
    dmesg: str = ""  # kernel log lines after the probe-time ones
    # both ends of each link (issue 26 item 4: review MF-14) and the switch's 64-bit counters (item 5)
    link_speeds: tuple | None = None  # IB speeds this port's PortInfo supports (None: by hca_type, tools_link.HCA_SPEEDS)
    peer_speeds: tuple | None = None  # ... the switch port's (None: up to the speed the port runs at)
    smp_tools: bool = True  # smpquery / perfquery installed (infiniband-diags)
    peer_ext: bool = True  # the switch port answers perfquery -x with its error counters (CapMask2 bit 1)
    peer_pinned16: tuple = ()  # PortCounters fields that sit at 65535 on the switch port (16-bit)
    eth_speed_mbps: int = 400000  # a RoCE netdev's speed (sysfs speed, ethtool Speed)
    eth_supported: tuple = (400000, 200000, 100000, 50000, 25000)  # ethtool Supported link modes (Mb/s)
    eth_advertised: tuple | None = None  # ethtool Advertised link modes (None: the supported ones)
    eth_partner: tuple | None = None  # Link partner advertised link modes (None: not reported)
    pci_device: str | None = None  # /sys/class/infiniband/DEV/device/device (None: not modelled)
    ecn_sysfs: bool = True  # MLNX_OFED's ecn/ sysfs is there (False: the inbox/upstream mlx5 driver)
    flat: tuple = ()  # counters that do not move between the samples, traffic or not (np_cnp_sent)
    # net plugins (issue 26): EFA (AWS p4d/p5) and gVNIC (GCP A3) nodes, ports=0 (no IB/RoCE port)
    efa_devices: tuple = ()  # EFA devices (driver efa, link layer Unknown), P5_EFA / P4D_EFA
    # NIC functions with no RDMA device, as (vendor, driver or None): ("0x15b3", "mlx5_core") is a
    # ConnectX whose mlx5_ib is not loaded, ("0x1af4", "virtio-pci") a VM's virtio-net
    bare_nics: tuple = ()
    gvnic: int = 0  # gVNIC netdevs eth0.. (driver gve)
    net_libs: tuple | None = ()  # net plugins and libfabric the job maps (None: not scanned)
    efa_in_job: bool = True  # the job's container has the EFA devices' /dev/infiniband/uverbs*
    # the ncclNetPlugin_vN each library defines (path inside the job's root -> versions); a
    # library not named here is unreadable (unknown)
    plugin_exports: dict = field(default_factory=dict)
    eth_ports: tuple = ()  # port indexes that are Ethernet on an IB node (a GB200 tray's BlueField-3 ports)
    eth_hca_type: str = "MT41692"  # the CA type of those ports (BlueField-3)
    gds: tuple = ()  # port indexes of GPUDirect Storage HCAs under the GPUs' switches (PIX to GPUs 2k, 2k+1)
    nic_numa: dict = field(default_factory=dict)  # nic index -> numa_node (default: 0 for the first 4, else 1)
    switch_name: str | None = None  # lspci's name of the PCIe switch ports (None: the real Broadcom PEX890xx)
    # the job's view (issue 26 item 1): its netns, /dev, libibverbs.d, limits; defaults: a healthy job
    job_ifaces: tuple | None = None  # interfaces of the job's netns (None: the host's, a host-network job)
    # the job's interfaces with an address (/proc/PID/net/if_inet6, route, fib_trie); None: those files absent
    job_addressed: tuple | None = None
    job_uverbs: bool | None = None  # /dev/infiniband/uverbs* in the job's root (None: as uverbs)
    job_providers: tuple | None = None  # verbs providers in the job's image (None: the NIC's, when provider)
    libibverbs_d: tuple | None = None  # NAME.driver files of its /etc/libibverbs.d (None: one per provider)
    job_memlock: str = "unlimited"  # its RLIMIT_MEMLOCK, soft and hard (bytes or unlimited)
    job_capeff: str = "0000000000000000"  # its CapEff (a non-root job: no capabilities)
    # its /proc/PID/uid_map: the initial user namespace's identity map (user_namespaces(7))
    job_uid_map: str = "         0          0 4294967295\n"


# Kernel log lines in the kernel's own formats (mlx5e_update_carrier in mlx5/core/en_main.c, the
# NVIDIA driver's Xid line, drivers/pci/pcie/aer.c, the nvidia-peermem line of gpud's kmsg fixture).
DMESG_BOOT_LINKS = ("[   12.412034] mlx5_core 0000:1a:00.0 enp26s0np0: Link down\n"
                    "[   14.920117] mlx5_core 0000:1a:00.0 enp26s0np0: Link up\n")
DMESG_FLAP = ("[ 5120.003311] mlx5_core 0000:1a:00.0 enp26s0np0: Link down\n"
              "[ 5121.871024] mlx5_core 0000:1a:00.0 enp26s0np0: Link up\n")
DMESG_XID_79 = "[ 8812.339102] NVRM: Xid (PCI:0000:9d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
DMESG_XID_31 = ("[ 3021.117204] NVRM: Xid (PCI:0000:19:00): 31, pid=48213, name=python3, Ch 00000008, intr 00000000. "
                "MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f3a_1c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ\n")
DMESG_AER_UNCORRECTED = ("[ 4410.771320] pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:1a:00.0\n"
                         "[ 4410.771338] mlx5_core 0000:1a:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), "
                         "type=Transaction Layer, (Requester ID)\n")
DMESG_AER_CORRECTED = ("[ 1201.118840] pcieport 0000:00:01.0: AER: Corrected error received: 0000:1a:00.0\n"
                       "[ 1201.118851] mlx5_core 0000:1a:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, "
                       "(Receiver ID)\n")
# An NVMe drive (not on NCCL's path) behind its own root port (brief peer: AER judged on the path only)
DMESG_AER_NVME = ("[ 5120.402118] pcieport 0000:c0:01.1: AER: Uncorrected (Non-Fatal) error received: 0000:c1:00.0\n"
                  "[ 5120.402131] nvme 0000:c1:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), "
                  "type=Transaction Layer, (Requester ID)\n")
DMESG_PEERMEM = "[ 2279.966360] nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing\n"
# p5.48xlarge: 32 EFA devices named rdmap<bus>s0, four under each GPU's PCIe switch (rdmap79s0 at
# 0000:4f:00.0 beside GPU 0000:53:00.0, rdmap96s0 at 0000:60:00.0 beside 0000:64:00.0: the p5
# layouts in public EFA benchmarks); p4d.24xlarge: four, rdmap16s27/32s27/144s27/160s27 (fi_info
# -p efa domains rdmap16s27-rdm ... on p4de).
P5_EFA = tuple(f"rdmap{g + k}s0" for g in (79, 96, 113, 130, 147, 164, 181, 198) for k in range(4))
P4D_EFA = ("rdmap16s27", "rdmap32s27", "rdmap144s27", "rdmap160s27")
JOB_PID = 4242
JOB_ROOT = f"/proc/{JOB_PID}/root"


def provider_name(node: Node) -> str:
    return "bnxt_re" if node.driver == "bnxt" else "efa" if node.driver == "efa" else "mlx5"


def image_providers(node: Node) -> tuple:
    if node.job_providers is not None:
        return node.job_providers
    return (provider_name(node),) if node.provider else ()


def driver_files(node: Node) -> tuple:
    return image_providers(node) if node.libibverbs_d is None else node.libibverbs_d


def job_rdma_libs(node: Node) -> list[str]:
    """What the job's process maps of the RDMA userspace its image holds, once NCCL initialized:
    libibverbs and every provider its /etc/libibverbs.d names (rdma-core load_drivers)."""
    if not node.verbs_loaded or not node.verbs:
        return []
    libs = ["/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0"]
    return libs + [f"/usr/lib/x86_64-linux-gnu/lib{p}.so.1.24.50.0" for p in image_providers(node) if p in driver_files(node)]


NET_DEV_HEAD = ("Inter-|   Receive                                                |  Transmit\n"
                " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls "
                "carrier compressed\n")


def _job_view(node: Node, files: dict) -> dict:
    """The job's /proc/PID files: net/dev of its netns, limits, status; its root's /dev/infiniband
    and /etc/libibverbs.d (formats: net/core/net-procfs.c, fs/proc/base.c proc_pid_limits, proc(5))."""
    names = node.job_ifaces
    if names is None:
        names = sorted({path.split("/")[4] for path in files if path.startswith("/sys/class/net/")})
    out = {f"/proc/{JOB_PID}/net/dev": NET_DEV_HEAD + "".join(
        f"{n:>6}: 9120345 60321 0 0 0 0 0 0 8810034 59112 0 0 0 0 0 0\n" for n in names)}
    if node.job_addressed is not None:
        out.update(_job_addresses(node.job_addressed))
    memlock = node.job_memlock
    out[f"/proc/{JOB_PID}/limits"] = (
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max cpu time              unlimited            unlimited            seconds   \n"
        f"Max locked memory         {memlock:<21}{memlock:<21}bytes     \n"
        "Max open files            1048576              1048576              files     \n")
    out[f"/proc/{JOB_PID}/status"] = (f"Name:\tpython3\nPid:\t{JOB_PID}\nUid:\t1000\t1000\t1000\t1000\n"
                                      f"CapInh:\t0000000000000000\nCapPrm:\t{node.job_capeff}\nCapEff:\t{node.job_capeff}\n")
    out[f"/proc/{JOB_PID}/uid_map"] = node.job_uid_map
    if node.uverbs if node.job_uverbs is None else node.job_uverbs:
        for u in range(node.ports):
            out[f"{JOB_ROOT}/dev/infiniband/uverbs{u}"] = ""
        out[f"{JOB_ROOT}/dev/infiniband/rdma_cm"] = ""
    if node.verbs:
        for name in driver_files(node):
            out[f"{JOB_ROOT}/etc/libibverbs.d/{name}.driver"] = f"driver {name}\n"
    for name in image_providers(node):
        out[f"{JOB_ROOT}/usr/lib/x86_64-linux-gnu/libibverbs/lib{name}-rdmav34.so"] = ""
    return out


def _job_addresses(names: tuple) -> dict:
    """The first interface of `names` on 10.244.1.7/24 (a CNI pod network, default route via
    10.244.1.1), every one with an fe80:: address; lo ::1 and 127.0.0.1. Formats: net/ipv6/addrconf.c
    if6_seq_show, net/ipv4/fib_trie.c fib_route_seq_show and fib_trie_seq_show."""
    inet6 = "00000000000000000000000000000001 01 80 10 80       lo\n" + "".join(
        f"fe80000000000000a8c1abfffe2e1f{k + 1:02x} {k + 3:02x} 40 20 80 {n:>8}\n" for k, n in enumerate(names))
    route = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
    trie = "Local:\n  +-- 127.0.0.0/8 2 0 2\n     |-- 127.0.0.1\n        /32 host LOCAL\n"
    if names:
        route += (f"{names[0]}\t00000000\t0101F40A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
                  f"{names[0]}\t0001F40A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
        trie += "  +-- 10.244.1.0/24 2 0 2\n     |-- 10.244.1.7\n        /32 host LOCAL\n"
    return {f"/proc/{JOB_PID}/net/if_inet6": inet6, f"/proc/{JOB_PID}/net/route": route,
            f"/proc/{JOB_PID}/net/fib_trie": trie}


def device(node: Node, i: int) -> str:
    """The RDMA device name of port i: a DGX's own names, bnxt_re<i> on Broadcom, else mlx5_<i>."""
    if node.devices:
        return node.devices[i]
    return f"bnxt_re{i}" if node.driver == "bnxt" else f"mlx5_{i}"


def _ib_netdev(i: int) -> str:
    return f"ibp{int(NIC_BUSES[i], 16)}s0"


def _eth_netdev(i: int) -> str:
    return f"enp{int(NIC_BUSES[i], 16)}s0np0"


def is_eth(node: Node, i: int) -> bool:
    """Port i's link layer is Ethernet: a RoCE node, or an Ethernet port of an IB node (eth_ports)."""
    return node.fabric == "roce" or i in node.eth_ports


def hca_type(node: Node, i: int) -> str:
    return node.eth_hca_type if i in node.eth_ports else node.hca_type


def netdev(node: Node, i: int) -> str:
    return _eth_netdev(i) if is_eth(node, i) else _ib_netdev(i)


def lag_member(node: Node, i: int) -> str | None:
    """The second bond member of LAG device i (its first is netdev(node, i)); None without LAG."""
    return f"enp{int(NIC_BUSES[i], 16)}s0f1np1" if node.lag and node.fabric == "roce" else None


def _lag_files(node: Node, i: int) -> tuple[dict, dict]:
    """Bond i+1 over netdev(node, i) and lag_member(node, i): the member's master link, the
    bond's lower_<member> links (net/core/dev.c), the second member's netdev files."""
    first, second, bond = netdev(node, i), lag_member(node, i), f"bond{i + 1}"
    links = {f"/sys/class/net/{first}/master": f"/sys/devices/virtual/net/{bond}"}
    for member in (first, second):
        links[f"/sys/class/net/{bond}/lower_{member}"] = f"/sys/devices/pci0000:{NIC_BUSES[i]}/net/{member}"
    files = {f"/sys/class/net/{second}/mtu": str(node.netdev_mtu), f"/sys/class/net/{second}/speed": "400000",
             f"/sys/class/net/{second}/operstate": "up"}
    return files, links


def _gid_files(node: Node, i: int, port: str) -> dict:
    files = {}
    if not is_eth(node, i):
        guid = f"58a2:e103:00a7:82{i:02x}"
        files[f"{port}/gids/0"] = f"fe80:0000:0000:0000:{guid}"
        files[f"{port}/gid_attrs/types/0"] = "IB/RoCE v1"
        for idx in range(1, 4):
            files[f"{port}/gids/{idx}"] = "0000:0000:0000:0000:0000:0000:0000:0000"
        return files
    ll = f"fe80:0000:0000:0000:0e42:a1ff:fe5d:4d{i:02x}"
    v4 = f"0000:0000:0000:0000:0000:ffff:0a00:{i + 1:02x}11"
    v6 = f"fd00:0000:0000:0010:0e42:a1ff:fe5d:4d{i:02x}"
    addrs = [ll, v6, v4] if i in node.gid_extra_ipv6 else [ll, v4]
    table = [(a, t) for a in addrs for t in ("IB/RoCE v1", "RoCE v2")]
    for idx, (gid, gtype) in enumerate(table):
        files[f"{port}/gids/{idx}"] = gid
        files[f"{port}/gid_attrs/types/{idx}"] = gtype
        vlan = gid == v4 and i in node.gid_vlan  # the kernel names the VLAN netdev that holds the address
        files[f"{port}/gid_attrs/ndevs/{idx}"] = f"{_eth_netdev(i)}.100" if vlan else _eth_netdev(i)
    for idx in range(len(table), 8):
        files[f"{port}/gids/{idx}"] = "0000:0000:0000:0000:0000:0000:0000:0000"
    return files


def _counters(node: Node, i: int, port: str, later: bool) -> dict:
    files = {}
    group = {"counters": IB_COUNTERS, "hw_counters": {**HW_COUNTERS, **(ROCE_CC_COUNTERS if node.fabric == "roce" else {})}}
    if node.driver == "bnxt":
        group = {"hw_counters": BNXT_HW_COUNTERS}
    for sub, counters in group.items():
        for name, value in counters.items():
            value = node.static_counters.get(name, value)
            if later and name not in node.flat:
                if name in node.gone_later.get(i, ()):
                    continue
                value += node.counter_growth.get(i, {}).get(name, 0)
                if node.traffic:
                    value += SECOND_SAMPLE_TRAFFIC.get(name, 0)
                    if name in CNP_GROWING:
                        value += 40
            files[f"{port}/{sub}/{name}"] = str(node.pinned.get(name, value))
    return files


def _sysfs(node: Node, later: bool) -> tuple[dict, dict]:
    files, links = {}, {}
    for i in range(node.ports):
        dev = device(node, i)
        port = f"{IB}/{dev}/ports/1"
        bdf = f"0000:{NIC_BUSES[i]}:00.0"
        state, phys = node.state.get(i, ("4: ACTIVE", "5: LinkUp"))
        files.update({
            f"{IB}/{dev}/hca_type": hca_type(node, i), f"{IB}/{dev}/fw_ver": node.fw_ver,
            f"{IB}/{dev}/board_id": "MT_0000000838", f"{IB}/{dev}/node_type": "1: CA",
            f"{port}/state": state, f"{port}/phys_state": phys,
            f"{port}/rate": node.rate.get(i, node.base_rate),
            f"{port}/link_layer": "Ethernet" if is_eth(node, i) else "InfiniBand",
            f"{port}/lid": "0x0" if is_eth(node, i) else f"0x{128 + i:x}",
            f"{port}/sm_lid": "0x0" if is_eth(node, i) else "0x1",
            f"{IB}/{dev}/device/net/{netdev(node, i)}/ifindex": str(4 + i),
            f"{IB}/{dev}/tc/1/traffic_class": "" if node.global_tclass is None else f"Global tclass={node.global_tclass}\n",
        })
        links[f"{IB}/{dev}/device"] = f"/sys/devices/pci0000:{NIC_BUSES[i]}/0000:{NIC_BUSES[i]}:01.0/{bdf}"
        if node.pci_device:
            files[f"{IB}/{dev}/device/device"] = files[f"{PCI}/{bdf}/device"] = node.pci_device
        links[f"{IB}/{dev}/device/driver"] = f"/sys/bus/pci/drivers/{'bnxt_en' if node.driver == 'bnxt' else 'mlx5_core'}"
        files.update(_gid_files(node, i, port))
        files.update(_counters(node, i, port, later))
        width = node.pci_width.get(i, 16)
        files.update({
            f"{PCI}/{bdf}/vendor": "0x14e4" if node.driver == "bnxt" else "0x15b3", f"{PCI}/{bdf}/class": "0x020700",
            f"{PCI}/{bdf}/current_link_speed": f"{node.nic_gts}.0 GT/s PCIe", f"{PCI}/{bdf}/max_link_speed": "32.0 GT/s PCIe",
            f"{PCI}/{bdf}/current_link_width": str(width), f"{PCI}/{bdf}/max_link_width": "16",
            f"{PCI}/{bdf}/numa_node": str(node.nic_numa.get(i, 0 if i < 4 else 1)),
        })
        nd = netdev(node, i)
        files.update({
            f"/sys/class/net/{nd}/mtu": str(node.netdev_mtu) if is_eth(node, i) else "4092",
            f"/sys/class/net/{nd}/speed": str(node.eth_speed_mbps) if is_eth(node, i) else "-1",
            f"/sys/class/net/{nd}/operstate": "up" if is_eth(node, i) else "down",
        })
        if lag_member(node, i):
            lag_files, lag_links = _lag_files(node, i)
            files.update(lag_files)
            links.update(lag_links)
        for ecn_nd in (nd, lag_member(node, i)) if node.fabric == "roce" and node.driver == "mlx5" else ():
            if ecn_nd is None or not node.ecn_sysfs:  # the ecn sysfs is MLNX_OFED mlx5 only
                continue
            for point in ("roce_np", "roce_rp"):
                for prio in range(8):
                    on = node.ecn.get(i, {}).get(prio, 1 if prio == 3 else 0)
                    files[f"/sys/class/net/{ecn_nd}/ecn/{point}/enable/{prio}"] = str(on)
            if node.cnp_dscp is not None:
                files[f"/sys/class/net/{ecn_nd}/ecn/roce_np/cnp_dscp"] = str(node.cnp_dscp)
                files[f"/sys/class/net/{ecn_nd}/ecn/roce_np/cnp_802p_prio"] = "6"
        if node.fabric == "roce" and node.driver == "bnxt" and node.bnxt_cc is not None:
            cc = f"/sys/kernel/debug/bnxt_re/{bdf}/cc_config"
            files[f"{cc}/enable_cc"], files[f"{cc}/tos_ecn"] = (str(v) for v in node.bnxt_cc)
    devices = [f"0000:{NIC_BUSES[i]}:00.0" for i in range(node.ports)] + [f"0000:{GPU_BUSES[g]}:00.0" for g in range(node.gpus)]
    if node.iommu_type is not None:
        for bdf in devices:
            files[f"{PCI}/{bdf}/iommu_group/type"] = node.iommu_type
    for g in range(node.gpus):
        bdf = f"0000:{GPU_BUSES[g]}:00.0"
        files.update({
            f"{PCI}/{bdf}/vendor": "0x10de", f"{PCI}/{bdf}/class": "0x030200",
            f"{PCI}/{bdf}/current_link_speed": "2.5 GT/s PCIe", f"{PCI}/{bdf}/max_link_speed": "32.0 GT/s PCIe",
            f"{PCI}/{bdf}/current_link_width": str(node.gpu_width.get(g, 16)), f"{PCI}/{bdf}/max_link_width": "16",
            f"{PCI}/{bdf}/numa_node": "0" if g < 4 else "1",
        })
    for n, (vendor, driver) in enumerate(node.bare_nics):
        bdf = f"0000:{0xe0 + n:02x}:00.0"
        files.update({f"{PCI}/{bdf}/vendor": vendor, f"{PCI}/{bdf}/class": "0x020000"})
        if driver:
            links[f"{PCI}/{bdf}/driver"] = f"/sys/bus/pci/drivers/{driver}"
    files[f"{PCI}/0000:00:00.0/vendor"] = "0x8086"
    files[f"{PCI}/0000:00:00.0/class"] = "0x060000"
    if node.peermem:
        files["/sys/module/nvidia_peermem/initstate"] = "live"
    if node.gpus:
        files["/proc/driver/nvidia/version"] = node.gpu_driver
    files["/sys/class/iommu/dmar0/devices/placeholder"] = ""
    files["/proc/cmdline"] = node.cmdline
    if node.uverbs:
        for u in range(node.ports):
            files[f"/dev/infiniband/uverbs{u}"] = ""
    if node.host_verbs:
        files["/usr/lib/x86_64-linux-gnu/libibverbs.so.1"] = ""
        files[f"/usr/lib/x86_64-linux-gnu/libibverbs/lib{provider_name(node)}-rdmav34.so"] = ""
    if node.job and node.verbs:
        files[f"{JOB_ROOT}/usr/lib/x86_64-linux-gnu/libibverbs.so.1"] = ""
    if node.job:
        files[f"{JOB_ROOT}/etc/passwd"] = "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/bash\n"
        files.update({f"{JOB_ROOT}{path}": text for path, text in node.job_files.items()})
    files["/sys/class/dmi/id/sys_vendor"], files["/sys/class/dmi/id/product_name"] = node.dmi
    _plugin_devices(node, files, links)
    for name in node.netdevs:
        files[f"/sys/class/net/{name}/operstate"] = "unknown" if name == "lo" else "up"
        files[f"/sys/class/net/{name}/mtu"] = "65536" if name == "lo" else "1500"
    if node.job:
        files.update(_job_view(node, files))
    return files, links


def _plugin_devices(node: Node, files: dict, links: dict) -> None:
    """EFA devices: port link layer Unknown (IB_LINK_LAYER_UNSPECIFIED, efa_verbs.c
    efa_port_link_layer; core/sysfs.c link_layer_show), 100 Gb/sec 4X EDR (efa_query_port), no LID,
    driver efa; their uverbs on the host and, unless left out, in the job's container. gVNIC
    netdevs eth0.. (driver gve), MTU 8244 as on A3."""
    for k, dev in enumerate(node.efa_devices):
        port = f"{IB}/{dev}/ports/1"
        files.update({f"{port}/link_layer": "Unknown", f"{port}/state": "4: ACTIVE", f"{port}/phys_state": "5: LinkUp",
                      f"{port}/rate": "100 Gb/sec (4X EDR)", f"{port}/lid": "0x0", f"{port}/sm_lid": "0x0",
                      f"{IB}/{dev}/node_type": "1: CA", f"/dev/infiniband/uverbs{k}": ""})
        links[f"{IB}/{dev}/device/driver"] = "/sys/bus/pci/drivers/efa"
        if node.job and node.efa_in_job:
            files[f"{JOB_ROOT}/dev/infiniband/uverbs{k}"] = ""
    for i in range(node.gvnic):
        files.update({f"/sys/class/net/eth{i}/operstate": "up", f"/sys/class/net/eth{i}/mtu": "8244"})
        links[f"/sys/class/net/eth{i}/device/driver"] = "/sys/bus/pci/drivers/gve"
