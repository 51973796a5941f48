"""Which counter means what, per RoCE driver: the names the counter derivations read (data).

Each RDMA driver names its counters its own way; a derivation asks for a *role* (transport
loss, pause time on priority p, bytes on priority p ...) and this map answers with the names of
the driver at hand. A name is "hw:NAME" (/sys/class/infiniband/DEV/ports/N/hw_counters/NAME) or
"eth:NAME" (`ethtool -S NETDEV`); "{p}" is the 802.1p priority. A driver that lacks a role has
no entry for it: that role is unknown on its NICs, never zero.

Sources (Linux kernel, torvalds/linux):
- mlx5: drivers/infiniband/hw/mlx5/counters.c (hw_counters) and
  Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst (ethtool -S);
  the loss and error lists are domain.py's, written once there.
- bnxt_re / bnxt_en: drivers/infiniband/hw/bnxt_re/hw_counters.c (bnxt_re_stat_descs) and
  drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c (BNXT_RX/TX_STATS_EXT_PFC_ENTRY,
  bnxt_rx/tx_bytes_pri_arr, bnxt_rx_pkts_pri_arr, bnxt_port_stats_arr; the link going down is
  bnxt_port_stats_ext_arr's BNXT_RX_STATS_EXT_ENTRY(link_down_events), printed "link_down_events").
- irdma / ice: drivers/infiniband/hw/irdma/verbs.c (irdma_hw_stat_names) and
  drivers/net/ethernet/intel/ice/ice_ethtool.c ("rx_priority_%u_xoff.nic", ICE_PF_STAT; the link
  going down is ICE_PF_STAT("link_down_events.nic"), added by "ice: add link_down_events
  statistic": older kernels lack it, and a name a port does not show is not read as zero).
  ice counts pause frames only, no pause time: pause is unknown on ice.
"""

from __future__ import annotations

from functools import cache

from allreduce_doctor.domain import ETH_PHY_ERRORS, ETH_PORT_LOSS, ROCE_TRANSPORT_LOSS

PRIORITIES = range(8)

# role -> names, per driver. Roles:
#   loss          transport retransmissions / sequence errors / timeouts (each is a lost packet;
#                 irdma has no retransmission counter: packets its protocol engine discarded)
#   prio_discards packets dropped on NCCL's priority for lack of buffer
#   prio_packets  packets received on NCCL's priority (the denominator of prio_discards)
#   prio_bytes    bytes moved on NCCL's priority, both directions (is the window loaded?)
#   rdma_bytes    RDMA bytes of this function whatever the priority (when the priority is unknown)
#   phy_errors    frames damaged on the wire, errors FEC did not correct, the link going down
#   phy_uncorrected / phy_bits  symbol errors after FEC and bits received: their ratio is the
#                 post-FEC bit error rate (counters.rst: rx_pcs_symbol_err_phy / rx_bits_phy)
#   pause_rx_us   microseconds the peer paused this port on priority p (the network is slow)
#   pause_tx_us   microseconds this port paused its peer on priority p (this host cannot drain)
#   storm         the NIC's pause-storm watchdog fired (it stopped sending pause)
#   port_discards packets the port dropped for lack of buffer, every priority (lossy classes too:
#                 shown and compared across nodes, not judged as NCCL's loss)
#   pause_rx_frames / pause_tx_frames  pause frames received / sent, every priority plus global
#                 pause (frames are not time: shown and compared across nodes, not judged)
#   pcie_stall    the NIC could not write what it received into host memory, or the PCIe link
#                 retrained: mlx5 counters.rst, outbound_pci_stalled_rd/wr_events ("seconds where
#                 outbound_pci_stalled_rd/wr was above 30%"; the rd/wr values themselves are a
#                 percentage gauge, not a count), outbound_pci_buffer_overflow, rx/tx_pci_signal_integrity
#   cnp_sent      CNPs this host sent as a notification point (it receives congested traffic)
#   cnp_handled   CNPs this host acted on as a reaction point (its sending is congested)
#   ecn_marked    RoCE packets received with ECN CE set (the notification point answers each with a CNP)
#   cnp_ignored   CNPs received and not acted on: the reaction point (DCQCN) is off (mlx5 counters.rst)
DRIVERS: dict[str, dict[str, tuple[str, ...]]] = {
    "mlx5": {
        "loss": tuple(f"hw:{n}" for n in ROCE_TRANSPORT_LOSS),
        "prio_discards": ("eth:rx_prio{p}_discards",),
        "port_discards": tuple(f"eth:{n}" for n in ETH_PORT_LOSS),
        "prio_packets": ("eth:rx_prio{p}_packets",),
        "prio_bytes": ("eth:rx_prio{p}_bytes", "eth:tx_prio{p}_bytes"),
        "rdma_bytes": ("eth:rx_vport_rdma_unicast_bytes", "eth:tx_vport_rdma_unicast_bytes"),
        "phy_errors": tuple(f"eth:{n}" for n in ETH_PHY_ERRORS),
        "phy_uncorrected": ("eth:rx_pcs_symbol_err_phy",),
        "phy_bits": ("eth:rx_bits_phy",),
        "pause_rx_us": ("eth:rx_prio{p}_pause_duration",),
        "pause_tx_us": ("eth:tx_prio{p}_pause_duration",),
        # counters.rst: the warning event is informative; the error event means the watchdog
        # stopped pause transmission (drops possible).
        "storm": ("eth:tx_pause_storm_error_events",),
        "pause_rx_frames": ("eth:rx_prio{p}_pause", "eth:rx_global_pause"),
        "pause_tx_frames": ("eth:tx_prio{p}_pause", "eth:tx_global_pause"),
        "pcie_stall": ("eth:outbound_pci_stalled_rd_events", "eth:outbound_pci_stalled_wr_events",
                       "eth:outbound_pci_buffer_overflow", "eth:rx_pci_signal_integrity",
                       "eth:tx_pci_signal_integrity"),
        "cnp_sent": ("hw:np_cnp_sent",),
        "cnp_handled": ("hw:rp_cnp_handled",),
        "ecn_marked": ("hw:np_ecn_marked_roce_packets",),
        "cnp_ignored": ("hw:rp_cnp_ignored",),
    },
    "bnxt_re": {
        "loss": ("hw:to_retransmits", "hw:seq_err_naks_rcvd", "hw:dup_req", "hw:oos_drop_count"),
        "prio_packets": ("eth:rx_packets_pri{p}",),
        "prio_bytes": ("eth:rx_bytes_pri{p}", "eth:tx_bytes_pri{p}"),
        "rdma_bytes": ("hw:rx_bytes", "hw:tx_bytes"),
        "phy_errors": ("eth:rx_fcs_err_frames", "eth:link_down_events"),
        "pause_rx_us": ("eth:pfc_pri{p}_rx_duration_us",),
        "pause_tx_us": ("eth:pfc_pri{p}_tx_duration_us",),
        "pause_rx_frames": ("eth:rx_pfc_ena_frames_pri{p}", "eth:rx_pause_frames"),
        "pause_tx_frames": ("eth:tx_pfc_ena_frames_pri{p}", "eth:tx_pause_frames"),
        # tx/rx_cnp_pkts in newer kernels, renamed np_cnp_pkts / rp_cnp_handled after that
        "cnp_sent": ("hw:tx_cnp_pkts", "hw:np_cnp_pkts"),
        "cnp_handled": ("hw:rx_cnp_pkts", "hw:rp_cnp_handled"),
        "ecn_marked": ("hw:rx_ecn_marked_pkts",),
    },
    "irdma": {
        "loss": ("hw:ip4InDiscards", "hw:ip6InDiscards"),
        "rdma_bytes": ("hw:ip4InOctets", "hw:ip4OutOctets", "hw:ip6InOctets", "hw:ip6OutOctets"),
        "phy_errors": ("eth:rx_crc_errors.nic", "eth:link_down_events.nic"),
        "pause_rx_frames": ("eth:rx_priority_{p}_xoff.nic", "eth:link_xoff_rx.nic"),
        "pause_tx_frames": ("eth:tx_priority_{p}_xoff.nic", "eth:link_xoff_tx.nic"),
        "cnp_sent": ("hw:cnpSent",),
        "cnp_handled": ("hw:cnpHandled",),
    },
}


# The answers below are functions of DRIVERS alone, asked for every port of every bundle: cached.
@cache
def names(driver: str, role: str, priority: int | None) -> tuple[tuple[str, str], ...]:
    """((group, counter), ...) of a role on a driver; () when the driver lacks it (or it needs an
    unknown priority). group is 'hw' or 'eth'."""
    out = []
    for entry in DRIVERS.get(driver, {}).get(role, ()):
        group, name = entry.split(":", 1)
        if "{p}" in name:
            if priority is None:
                continue
            name = name.format(p=priority)
        out.append((group, name))
    return tuple(out)


@cache
def every_priority(driver: str, role: str) -> tuple[tuple[str, str], ...]:
    """((group, counter), ...) of a role summed over all eight priorities (each name once)."""
    return tuple(dict.fromkeys(pair for p in PRIORITIES for pair in names(driver, role, p)))


@cache
def _every_name(driver: str) -> frozenset[tuple[str, str]]:
    return frozenset(pair for role in DRIVERS[driver] for pair in every_priority(driver, role))


def driver_of(hw_names, eth_names) -> str | None:
    """The driver whose counter names this port shows most of; None when it shows none."""
    present = {("hw", n) for n in hw_names} | {("eth", n) for n in eth_names}
    scored = [(len(_every_name(d) & present), d) for d in DRIVERS]
    best, driver = max(scored)
    return driver if best else None
