"""Classify NCCL warnings (and the INFO lines that report failures) into kinds.

Each kind names the causes of ../shared/CAUSES.md it supports and whether it is a failure of
the job (`blocking`) or a note about setup that NCCL worked around. The first pattern that
matches names the line; wording differs across NCCL versions, so patterns are loose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    name: str
    pattern: re.Pattern
    causes: tuple[str, ...]
    blocking: bool = True


def _k(name: str, pattern: str, causes: tuple[str, ...], blocking: bool = True) -> Kind:
    return Kind(name, re.compile(pattern, re.IGNORECASE), causes, blocking)


_NET = ("fabric_unreachable", "mtu_mismatch", "wrong_gid_index", "cross_rail_unreachable")

KINDS: tuple[Kind, ...] = (
    _k("libibverbs_missing", r"open libibverbs|libibverbs\.so[^ ]*: cannot open|no userspace device-specific driver"
       r"|couldn't load driver 'lib(mlx5|ibverbs)|failed to load libibverbs", ("container_missing_libibverbs",), False),
    _k("rdma_core_symbols", r"dlvsym failed|undefined symbol: (ibv|mlx5dv)_|mlx5dv_\w+.*(not found|failed|missing)"
       r"|ibv_reg_dmabuf_mr.*(missing|not found|undefined)", ("rdma_core_outdated",)),
    _k("ib_open_failed", r"ibv_open_device failed|unable to open device|ibv_get_device_list failed"
       r"|ibv_alloc_pd failed", ("container_missing_ib_devices",)),
    _k("no_ib_device", r"NET/IB ?: ?No device found", ("container_missing_ib_devices", "wrong_ib_hca",
                                                         "socket_fallback"), False),
    _k("qp_timeout", r"ibv_modify_qp failed.*(timed out|\b110\b)", ("wrong_gid_index", "fabric_unreachable",
                                                                     "cross_rail_unreachable")),
    _k("qp_invalid", r"ibv_modify_qp failed.*(invalid argument|\b22\b)", ("wrong_gid_index",)),
    _k("qp_failed", r"ibv_(modify|create)_qp failed", _NET),
    _k("retry_exceeded", r"completion.*(error|status)\s*=?\s*12\b|retry (counter )?exceeded", _NET),
    _k("completion_prot_error", r"completion.*(error|status)\s*=?\s*4\b", ("rdma_core_outdated", "pcie_acs_enabled")),
    _k("completion_flush", r"completion.*(error|status)\s*=?\s*5\b", (), False),
    _k("completion_error", r"got completion.*(error|status)", _NET),
    _k("gid_change", r"async event\s*:\s*GID table change", ("gid_index_drift",)),
    _k("port_event", r"async event\s*:\s*(port error|local catastrophic|link)", ("link_errors",)),
    _k("nvls_failure", r"nvls.*(failure|failed|error)|NVLink SHARP|cuMulticast\w* failed|multicast.*failed",
       ("fabric_manager_not_ready",)),
    _k("fabric_manager", r"system not yet initialized|cuda (error|failure) '?802\b", ("fabric_manager_not_ready",)),
    _k("wrong_type", r"wrong type \d+ != \d+", ("asymmetric_transport",)),
    _k("msg_truncated", r"message truncated", ("asymmetric_transport",)),
    _k("no_socket_iface", r"no socket interface found|no usable listening interface|no interface found\b(?! in the same)",
       ("wrong_socket_ifname",)),
    _k("no_iface_subnet", r"no interface found in the same subnet", ("container_network_isolation", "wrong_socket_ifname")),
    _k("connect_refused", r"connection refused", ("container_network_isolation", "wrong_socket_ifname")),
    _k("connect_timeout", r"connect.*(timed out|timeout)|connection timed out", ("wrong_socket_ifname",
                                                                                   "container_network_isolation")),
    _k("no_route", r"no route to host|network is unreachable", ("wrong_socket_ifname", "container_network_isolation")),
    _k("net_not_found", r"network .* not found|failed to initialize any net plugin|could not find network",
       ("net_plugin_not_loaded",)),
    _k("plugin_failed", r"(net/plugin|net plugin).*(failed to open|load returned|dlopen failed|error loading)",
       ("net_plugin_not_loaded",), False),
    _k("ofi_error", r"NET/OFI", ("net_plugin_not_loaded",)),
    _k("cuda_p2p", r"peer access|cudaIpc\w+ failed|P2P.*(failed|error)", ("pcie_acs_enabled", "iommu_enabled",
                                                                           "p2p_disabled_by_env")),
    _k("out_of_memory", r"out of memory", ()),
    _k("cuda_failure", r"cuda failure|cuda error", ()),
    _k("remote_error", r"remote process exited|there was a network error|remote peer", _NET),
    _k("system_error", r"unhandled system error|ncclSystemError|system error", ()),
)

BY_NAME = {k.name: k for k in KINDS}
# Completion errors carry the peer and, from NCCL 2.19 on, the GIDs of both ends.
_PEER_RE = re.compile(r"from peer ([0-9a-fA-F.:]+(?:%\w+)?)")
_LGID_RE = re.compile(r"localGid\s*([0-9a-fA-F:.]+)")
_RGID_RE = re.compile(r"remoteGids?\s*([0-9a-fA-F:.]+)")
_VENDOR_RE = re.compile(r"vendor err\s*(\d+)")
_GIDX_RE = re.compile(r"local GID index\s*(\d+)", re.IGNORECASE)
_ADDR_RE = re.compile(r"(?:to|from|address)\s+\[?([0-9]{1,3}(?:\.[0-9]{1,3}){3})")


def classify(message: str) -> Kind | None:
    for kind in KINDS:
        if kind.pattern.search(message):
            return kind
    return None


def details(message: str) -> dict:
    """What a failure line says about the two ends (peer address, GIDs, vendor error)."""
    out: dict = {}
    for key, rx in (("peer", _PEER_RE), ("local_gid", _LGID_RE), ("remote_gid", _RGID_RE),
                    ("vendor_err", _VENDOR_RE), ("gid_index", _GIDX_RE), ("address", _ADDR_RE)):
        m = rx.search(message)
        if m:
            out[key] = int(m.group(1)) if key in ("vendor_err", "gid_index") else m.group(1).rstrip(".:")
    return out
