"""Domain truths that more than one source needs, written once (node probes, pasted evidence,
runbooks). Each carries the reason it holds; change it here and every path follows.
"""

from __future__ import annotations

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
# Physical-layer errors (mlx5 ethtool -S): frames damaged on the wire.
ETH_PHY_ERRORS = ("rx_crc_errors_phy", "rx_symbol_err_phy")
# Every drop, error and PCIe-stall counter worth showing when read or pasted (not all are loss).
ETH_DROP_AND_ERROR = ETH_PORT_LOSS + ETH_PHY_ERRORS + (
    "tx_discards_phy", "rx_out_of_buffer", "rx_pcs_symbol_err_phy", "rx_corrected_bits_phy",
    "rx_buffer_passed_thres_phy", "rx_in_range_len_errors_phy", "rx_out_of_range_len_phy",
    "rx_oversize_pkts_phy", "rx_undersize_pkts_phy", "rx_fragments_phy", "rx_jabbers_phy",
    "tx_errors_phy", "link_down_events_phy", "rx_wqe_err", "rx_buff_alloc_err",
    "tx_queue_dropped", "rx_pci_signal_integrity", "tx_pci_signal_integrity",
    "outbound_pci_stalled_rd", "outbound_pci_stalled_wr")
CNP_COUNTERS = ("np_cnp_sent", "rp_cnp_handled")
# InfiniBand physical-layer errors, PMA PortCounters under /sys/class/infiniband/DEV/ports/N/counters
# (kernel Documentation/ABI/stable/sysfs-class-infiniband): symbol errors, link retrains and downs,
# damaged received packets, local integrity errors. Each means a bad cable, optic or port.
IB_LINK_ERRORS = ("symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
                  "local_link_integrity_errors")
