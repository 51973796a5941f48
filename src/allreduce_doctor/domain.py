"""Domain truths that more than one source needs, written once (node probes, pasted evidence,
runbooks). Each carries the reason it holds; change it here and every path follows.
"""

from __future__ import annotations

import re

from allreduce_doctor.nccl_rules import lists as nccl_lists
from allreduce_doctor.nccl_rules.versions import version_tuple  # noqa: F401 (re-exported: domain.version_tuple)

# Interfaces that peers on other hosts cannot reach. NCCL itself skips only `docker` and `lo` when
# it picks an interface on its own (src/misc/socket.cc, ncclFindInterfaces: "^docker,lo"); the
# rest are the names Linux bridges and virtual links get from their creators: Docker user
# networks `br-<id>`, libvirt `virbr0` and its taps `vnet*`, veth pairs, CNI (`cni0`, flannel,
# Calico `cali*`, kube-proxy `kube-ipvs0`), LXC/LXD `lxc*`/`lxdbr0`, and tunnels (`tun*`).
VIRTUAL_IFACE_PREFIXES = ("docker", "virbr", "veth", "flannel", "cni", "cali", "tun", "kube", "br-", "lxc", "lxd",
                          "vnet")


def is_virtual_iface(name: str) -> bool:
    """Loopback, a bridge or a virtual link: an address on it does not route between hosts."""
    return name == "lo" or name.startswith("lo:") or name.startswith(VIRTUAL_IFACE_PREFIXES)


LOOPBACK_FIRST = ("an exclusion list that leaves lo: NCCL's search takes the first interface it admits, and lo "
                  "comes first, so the bootstrap binds 127.0.0.1, which no peer on another host reaches")


def admits_loopback(spec) -> bool:
    """NCCL_SOCKET_IFNAME is an exclusion list (`^a,b` or `^=a,b`) that does not exclude lo. A list the user
    gives replaces NCCL's own `^docker,lo` (misc/socket.cc ncclFindInterfaces, v2.4.8-1 to v2.30.7-1), its
    search skips only IPv6 loopback (findInterfaces; v2.30.7-1 os/linux.cc), and the bootstrap takes the first
    interface found (bootstrap.cc, maxIfs 1) in getifaddrs order, where lo (ifindex 1) comes first. Harmless on
    one host; judged where the text shows the job spans hosts (evidence/checks.py socket_ifaces, runbook gate)."""
    spec = str(spec or "")
    return spec.startswith("^") and nccl_lists.selects(spec, "lo")  # NCCL's own reading (nccl_rules/lists.py)


# Bus bandwidth that counts as "at the hardware limit": all_reduce busbw = algbw x 2(n-1)/n, the
# figure nccl-tests prints (nccl-tests doc/PERFORMANCE.md), compared with NICs x line rate.
# NCCL's Simple protocol over RDMA reaches ~90% of line rate at large sizes; 0.85 leaves room for
# protocol headers (RoCE v2 / IB transport) without calling a clearly slow run healthy.
BUSBW_AT_LIMIT = 0.85
# Below this an average over all sizes (small sizes drag it down) is clearly slow too.
BUSBW_AVG_BELOW = 0.5


def busbw_verdict(measured: float | None, expected: float | None, from_peak: bool = True) -> tuple[float | None, str]:
    """(ratio, verdict): at_limit | below | unclear | unmeasured."""
    if measured is None or not expected:
        return None, "unmeasured"
    ratio = round(measured / expected, 3)
    if ratio >= BUSBW_AT_LIMIT:
        return ratio, "at_limit"
    if from_peak or ratio < BUSBW_AVG_BELOW:
        return ratio, "below"
    return ratio, "unclear"


# A busbw clearly above NICs x line rate. nccl-tests' busbw is a ring's figure (algbw x 2(n-1)/n: point-to-point
# transfers over a flat fabric, doc/PERFORMANCE.md; sjeaugey in NVIDIA/nccl-tests#274), and a ring over the NICs
# cannot carry more than their line rate (nccl-tests counts GB/s as 1e9 bytes, src/all_reduce.cu, as line rate / 8
# does). What goes above it sends less over the network than a ring: NCCL's tree on two nodes, "up to ~2x the
# network speed" (sjeaugey, NVIDIA/nccl#946; NVIDIA/nccl-tests#196 and #22), an effect that is gone beyond two
# nodes (AddyLaddy, NVIDIA/nccl#812); or a reduction in the switches, NVLS or CollNet (NVLink SHARP, IB SHARP:
# nccl-tests#274). 1.05: a ring's peak sits below 1.0 (headers; about 0.9 at large sizes, as above); the 5% covers
# the timer's jitter and the peak being the best of both columns at the largest sizes, so only a figure no ring
# over those NICs gives is called above.
BUSBW_ABOVE_LINE = 1.05
TREE_GAIN_TWO_NODES = 2.0
# NCCL's algorithm names (src/init.cc ncclAlgoStr: "CollNet" v2.7-v2.12, "CollNetDirect", "CollNetChain", "NVLS",
# "NVLSTree" v2.19-v2.30, "PAT" v2.30) that reduce in the switches.
IN_NETWORK_ALGOS = frozenset({"nvls", "nvlstree", "collnet", "collnetdirect", "collnetchain"})
ALL_ALGOS = frozenset({"tree", "ring", "pat"}) | IN_NETWORK_ALGOS
BUSBW_ABOVE_REASONS = ("one_node", "in_network", "ring_only", "beyond_two_nodes", "beyond_tree", "tree_two_nodes")


def allreduce_algos(value: str | None) -> frozenset[str] | None:
    """The algorithms NCCL_ALGO leaves to AllReduce, or None when unset or unreadable. NCCL's parseList
    (src/graph/tuning.cc, v2.24-v2.30): `;`-separated entries, each `[function:]list`, a list of
    case-blind names, `^` first to exclude them; older NCCL takes the list alone."""
    if not value:
        return None
    enabled: set[str] | frozenset[str] = set(ALL_ALGOS)
    for entry in str(value).split(";"):
        function, _, names = entry.rpartition(":")
        if function and function.strip().lower() != "allreduce":
            continue
        names = names.strip().lower()
        excluded = names.startswith("^")
        listed = {n.strip() for n in names.lstrip("^").split(",") if n.strip()}
        if not listed <= ALL_ALGOS:
            return None  # NCCL refuses an unknown name (ncclInvalidUsage): the job ran with something else
        enabled = (ALL_ALGOS - listed) if excluded else listed
    return frozenset(enabled)


def busbw_above_reason(ratio: float | None, nodes: int | None, algos: frozenset[str] | None) -> str | None:
    """Why a busbw clearly above NICs x line rate is no fault (one of BUSBW_ABOVE_REASONS), None below it.
    `nodes`: the run's node count when shown; `algos`: allreduce_algos of the job's NCCL_ALGO."""
    if ratio is None or ratio < BUSBW_ABOVE_LINE:
        return None
    if nodes == 1:
        return "one_node"  # ranks of one host use P2P or SHM, not the NICs (transport.cc: p2p, shm, then net)
    if algos is not None and algos <= {"ring", "pat"}:  # no PAT for AllReduce (tuning.cc, v2.30)
        return "ring_only"
    if algos is not None and "tree" not in algos:  # NCCL_ALGO left the switches' algorithms, not the tree
        return "in_network"
    if nodes is not None and nodes > 2:
        return "beyond_two_nodes"
    return "beyond_tree" if ratio > TREE_GAIN_TWO_NODES else "tree_two_nodes"


# RoCE transport loss: mlx5 RDMA Q-counters under /sys/class/infiniband/DEV/ports/N/hw_counters
# (kernel drivers/infiniband/hw/mlx5/counters.c; NVIDIA "Understanding mlx5 Linux Counters"):
# each counts a retransmission, a timeout or a sequence error, so packets were lost.
ROCE_TRANSPORT_LOSS = ("out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "roce_adp_retrans",
                       "duplicate_request", "implied_nak_seq_err")
# Ethernet drops at the port (mlx5 ethtool -S, same NVIDIA counters page): rx_discards_phy is
# "packets discarded due to lack of buffer", rx_prioN_discards the same per priority. Not loss:
# rx_buffer_passed_thres_phy (informative: the port buffer passed 85% of its size) and
# rx_out_of_buffer (the kernel Ethernet RX ring had no descriptor; RDMA does not use that ring).
ETH_PORT_LOSS = ("rx_discards_phy",) + tuple(f"rx_prio{p}_discards" for p in range(8))
# Physical-layer errors (mlx5 ethtool -S; kernel Documentation/networking/device_drivers/ethernet/
# mellanox/mlx5/counters.rst, Physical Port Counters): frames damaged on the wire (CRC, symbol
# errors), symbol errors FEC did not correct ("traffic is lost": rx_pcs_symbol_err_phy) and the
# link going down ("may imply on port flapping": link_down_events_phy), which a flap between the
# two samples leaves invisible in the port state. rx_corrected_bits_phy is FEC doing its job.
ETH_PHY_ERRORS = ("rx_crc_errors_phy", "rx_symbol_err_phy", "rx_pcs_symbol_err_phy", "link_down_events_phy")
# Every drop, error and PCIe-stall counter worth showing when read or pasted (not all are loss).
ETH_DROP_AND_ERROR = ETH_PORT_LOSS + ETH_PHY_ERRORS + (
    "tx_discards_phy", "rx_out_of_buffer", "rx_corrected_bits_phy",
    "rx_buffer_passed_thres_phy", "rx_in_range_len_errors_phy", "rx_out_of_range_len_phy",
    "rx_oversize_pkts_phy", "rx_undersize_pkts_phy", "rx_fragments_phy", "rx_jabbers_phy",
    "tx_errors_phy", "rx_wqe_err", "rx_buff_alloc_err",
    "tx_queue_dropped", "rx_pci_signal_integrity", "tx_pci_signal_integrity",
    "outbound_pci_stalled_rd", "outbound_pci_stalled_wr")
CNP_COUNTERS = ("np_cnp_sent", "rp_cnp_handled")
# InfiniBand physical-layer errors, PMA PortCounters under /sys/class/infiniband/DEV/ports/N/counters
# (kernel Documentation/ABI/stable/sysfs-class-infiniband): symbol errors, link retrains and downs,
# damaged received packets, local integrity errors. Each means a bad cable, optic or port.
IB_LINK_ERRORS = ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
                  "local_link_integrity_errors")


# RDMA userspace as a process maps it (/proc/PID/maps): rdma-core's libibverbs.so.1 and the
# verbs provider it loads for the device, lib<name>-rdmav<ABI>.so or lib<name>.so.1 (rdma-core
# libibverbs/dynamic_driver.c; providers/<name>/). Provider per device name prefix (the kernel
# driver's ib device name: mlx5_0, bnxt_re0, irdmaX, efa_0; drivers/infiniband/hw/*).
RDMA_LIB = re.compile(r"^lib(ibverbs|mlx5|mlx4|bnxt_re|irdma|efa|hns|rxe|siw|qedr|erdma|mana|cxgb4|ocrdma|vmw_pvrdma)"
                      r"(-rdmav\d+)?\.so")
VERBS_PROVIDERS = ("mlx5", "mlx4", "bnxt_re", "irdma", "efa", "hns", "rxe", "siw", "qedr", "erdma", "mana")


def verbs_provider(device: str) -> str | None:
    """'mlx5_3' -> 'mlx5', 'bnxt_re0' -> 'bnxt_re', 'rocep1s0' (an unknown naming) -> None."""
    return next((p for p in VERBS_PROVIDERS if str(device).startswith(p)), None)


# vendor_part_id / CA type -> the fastest rate the adapter generation supports, in Gb/s (4X IB
# or its Ethernet equivalent): ConnectX-4/5 (4115-4122) EDR/100GbE, ConnectX-6 (4123-4125) HDR
# 200G, ConnectX-7 (4129) NDR 400G, ConnectX-8 (4131) XDR 800G, BlueField-2 (41686 is 0xa2d6)
# 200G, BlueField-3 (41692, 0xa2dc) 400G. PCI IDs: kernel drivers/net/ethernet/mellanox/mlx5/core/main.c
# (mlx5_core_pci_table); rates: the NVIDIA ConnectX and BlueField product briefs. A card of one
# model may be sold at a lower rate (ConnectX-7 2x200G, BlueField-3 B3220 2x200G), so a port
# below this rating with no declared rate is unknown, never a fault on its own. 4126 (0x101e) is no
# one model: main.c names it "ConnectX Family mlx5Gen Virtual Function", the VF of ConnectX-6 Dx,
# ConnectX-7 and BlueField-3 alike (Azure NDv5's VFs), so its rating is the family's top, 400: a VF
# below it is unknown, not "at rating". The port's own PortInfo / ethtool modes decide first
# (probes/derive_linkcap.py); this table is the last resort, and said to be.
MODEL_MAX_GBPS = {4115: 100, 4116: 100, 4117: 100, 4118: 100, 4119: 100, 4120: 100, 4121: 100, 4122: 100,
                  4123: 200, 4124: 200, 4125: 200, 4126: 400, 4129: 400, 4130: 400, 4131: 800, 41682: 200,
                  41686: 200, 41692: 400}


def adapter_model(text) -> int | None:
    """'MT4129' / 'MT41692' / '4129' -> 4129 / 41692 (None when it names no part number)."""
    digits = "".join(ch for ch in str(text or "") if ch.isdigit())
    return int(digits) if digits and len(digits) <= 6 else None


def rated_gbps(hca_type) -> int | None:
    model = adapter_model(hca_type)
    return MODEL_MAX_GBPS.get(model) if model is not None else None


# NCCL's GID default (src/transport/net_ib.cc): NCCL_PARAM(IbGidIndex, "IB_GID_INDEX", 0) up to
# v2.20.5-1; -1 (choose by address family and RoCE version, ncclIbGetGidIndex) from v2.21.5-1.
NCCL_AUTO_GID_SINCE = (2, 21)
# NCCL_PARAM(DmaBufEnable, "DMABUF_ENABLE", 1) since v2.13.4-1 (src/init.cc, dmaBufSupported):
# NCCL registers GPU memory through DMA-BUF when the CUDA driver >= 11.7 reports
# CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED and ibv_reg_dmabuf_mr works (net_ib.cc ncclIbDmaBufSupport).
# ibv_reg_dmabuf_mr needs Linux >= 5.12 (ib_umem_dmabuf, drivers/infiniband/core/umem_dmabuf.c,
# merged in 5.12), and only the NVIDIA open kernel modules export DMA-BUF: dma_buf_export is
# EXPORT_SYMBOL_NS_GPL (drivers/dma-buf/dma-buf.c), out of reach of the proprietary module; the
# open module says "Open Kernel Module" in /proc/driver/nvidia/version (GPU Operator docs,
# "GPUDirect RDMA": DMA-BUF with the open kernel modules).
NCCL_DMABUF_SINCE = (2, 13)
KERNEL_DMABUF_SINCE = (5, 12)


# NCCL_IB_ADDR_RANGE: NCCL's automatic GID choice keeps only the GIDs of this subnet (envIbAddrRange and
# matchGidAddrPrefix in src/transport/net_ib.cc from v2.21.5-1, the tag where it appeared with the
# automatic choice; src/transport/net_ib/connect.cc from v2.29.2-1, same code through v2.30.7-1).
# "ADDR/BITS" parsed by inet_pton in NCCL_IB_ADDR_FAMILY's family; an address that does not parse,
# or BITS above 32 (IPv4) / 128 (IPv6), is ignored with a warning (no filter); BITS is strtol's
# number (0 for none: no filter; negative: matchGidAddrPrefix matches nothing). Without a "/",
# v2.21.5-1 and v2.22.3-1 write through strstr()'s NULL + 1; from v2.23.4-1 the range is ignored.
# Index 0 is never filtered: it stays NCCL's choice when no other GID of the family matches.
NCCL_ADDR_RANGE_SLASH_CHECKED = (2, 23)
NO_ADDRESS = "no address"  # a range that matches nothing (negative prefix length)


def nccl_addr_range(text, family: str, version: tuple | None):
    """(subnet, note) for NCCL_IB_ADDR_RANGE as NCCL reads it: subnet None = no filter, NO_ADDRESS,
    or an ipaddress network; note says what NCCL made of it. Raises ValueError when the outcome
    depends on an NCCL version that is not known."""
    import ipaddress
    import re

    text = str(text or "")[:127]  # NCCL copies it into char addrString[128]
    if not text:
        return None, ""
    if "/" not in text:
        if version is None or version < NCCL_ADDR_RANGE_SLASH_CHECKED:
            raise ValueError(f"NCCL_IB_ADDR_RANGE={text} has no '/BITS': NCCL 2.21-2.22 crash on it, later ones ignore it")
        return None, f"NCCL_IB_ADDR_RANGE={text} has no '/BITS': NCCL ignores it"
    addr, bits_text = text.split("/", 1)
    m = re.match(r"\s*([+-]?\d+)", bits_text)
    bits = int(m.group(1)) if m else 0
    try:
        base = ipaddress.IPv4Address(addr) if family == "AF_INET" else ipaddress.IPv6Address(addr)
    except ValueError:
        return None, f"NCCL_IB_ADDR_RANGE address {addr!r} is not {family}: NCCL ignores the range"
    if bits > base.max_prefixlen:
        return None, f"NCCL_IB_ADDR_RANGE mask /{bits} is too long for {family}: NCCL ignores the range"
    if bits < 0:
        return NO_ADDRESS, f"NCCL_IB_ADDR_RANGE mask /{bits} is negative: no GID matches it"
    if bits == 0:
        return None, ""
    return ipaddress.ip_network(f"{base}/{bits}", strict=False), f"NCCL_IB_ADDR_RANGE={text}"


def _in_subnet(entry: dict | None, subnet) -> bool:
    """matchGidAddrPrefix: an IPv4 subnet compares the GID's last 32 bits, an IPv6 one the whole GID."""
    import ipaddress

    if subnet is None:
        return True
    if subnet == NO_ADDRESS or not entry or not entry.get("gid"):
        return False
    try:
        raw = ipaddress.IPv6Address(entry["gid"])
    except ValueError:
        return False
    if subnet.version == 4:
        return ipaddress.IPv4Address(int(raw) & 0xFFFFFFFF) in subnet
    return raw in subnet


def nccl_auto_gid(table: dict[int, dict], family: str = "AF_INET", roce_version: int = 2, subnet=None) -> int:
    """The GID index NCCL >= 2.21 picks on its own: ncclIbGetGidIndex / ncclUpdateGidIndex
    (src/transport/net_ib.cc at v2.21.5-1), on entries {index: {kind, version, gid}}; an index not
    in the table is an empty GID. Start at 0; a candidate of the wanted family inside the subnet
    (NCCL_IB_ADDR_RANGE, nccl_addr_range) replaces an entry of the other family, and of the same
    family it replaces one of another RoCE version or an invalid (empty or link-local) one when it
    has the wanted version."""
    def fam(e):
        return "AF_INET" if (e or {}).get("kind") == "ipv4" else "AF_INET6"

    def valid(e):
        return (e or {}).get("kind") in ("ipv4", "global")

    best = 0
    for cand in range(1, max(table, default=0) + 1):
        cur, new = table.get(best), table.get(cand)
        if not _in_subnet(new, subnet):
            continue
        if fam(new) != fam(cur) and fam(new) == family or fam(new) == family and valid(new) and (
                ((cur or {}).get("version") != (new or {}).get("version") or not valid(cur))
                and (new or {}).get("version") == roce_version):
            best = cand
    return best


def nccl_range_matches(entries: list[dict], family: str, subnet) -> bool:
    """Whether any GID of the family on the port lies in the range (index 0 included)."""
    want = "ipv4" if family == "AF_INET" else None
    return any(_in_subnet(e, subnet) and (e.get("kind") == want if want else e.get("kind") != "ipv4") for e in entries)
