"""Classify NCCL warnings (and the INFO lines that report failures) into kinds.

The kinds and their patterns are the signature table (signatures/signatures.yaml, each row
citing the NCCL, rdma-core, CUDA or aws-ofi-nccl source it was read from); each kind's
candidate causes are signatures/candidates.yaml. A kind is `blocking` when the job fails on
it, and not when NCCL worked around it. The first row that matches names the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from allreduce_doctor.evidence import signatures as table


@dataclass(frozen=True)
class Kind:
    name: str
    pattern: table.LazyPattern  # compiled on first use
    causes: tuple[str, ...]
    blocking: bool = True


def _kinds() -> dict[str, Kind]:
    causes = table.candidates()
    return {s.kind: Kind(s.kind, s.pattern, tuple(c.cause for c in causes.get(s.kind, ())), s.blocking)
            for s in table.signatures()}


BY_NAME = _kinds()
# INFO lines that report a failure (NCCL logs some failures at INFO level), and the words one of them
# always holds (a line without one is not classified: most INFO lines are init chatter).
INFO_KINDS = {"libibverbs_missing", "no_ib_device", "ib_open_failed", "connect_refused", "connect_timeout",
              "no_route", "no_socket_iface", "no_iface_subnet", "plugin_failed", "net_not_found", "wrong_type",
              "gid_change", "port_event", "rdma_core_symbols", "fabric_manager",
              "libfabric_abi_missing", "ofi_provider_tcp",
              # 2.24+ print the merged-device count mismatch at INFO (net_ib.cc ncclIbAccept; net_ib/connect.cc 2.29+)
              "ib_vdevice_mismatch",
              # fallbacks NCCL reports at INFO and goes on after (signatures.yaml, dev8 block)
              "plugin_unusable", "nvls_fallback", "cumem_host_fallback", "p2p_unavailable", "ece_verbs_missing",
              "gin_no_gdr", "env_value_ignored", "mlx5dv_missing", "ib_device_failover", "ib_rail_mismatch",
              "qp_modify_retry",
              # a TCP connect NCCL retries (socket.h / socket.cc): a peer not listening yet, not a failure
              "connect_retry"}
# The OFI plugin on a TCP provider is a fallback it reports at INFO only (aws-ofi-nccl `Selected Provider is`).
FAIL_HINT_RE = re.compile(r"fail|error|refused|timed out|no device|wrong type|not found|no socket|no interface|"
                          r"no usable|async event|unable|cannot|couldn't|no userspace|not yet initialized"
                          r"|selected provider is tcp|selected provider is sockets|selected provider is udp"
                          r"|different number of devices|no route to host|network is unreachable"
                          r"|falling back to a /dev/shm|could not enable p2p|p2p is disabled|p2p not supported"
                          r"|doesn't exist|is unsupported|mismatched physical devices",
                          re.IGNORECASE)  # plain words: the bulk path (bulk.py) reads them as substrings
# Each hint word makes the bulk path read every line holding it (bulk.py _may_fail): a word every rank of a
# healthy job prints (`NET/Plugin: Could not find: libnccl-net.so`, 2.27+) would cost the healthy scan.
# Completion errors carry the peer and, from NCCL 2.19 on, the GIDs of both ends; from 2.24 a failed
# ibv_modify_qp does too (misc/ibvwrap.cc ibvModifyQpLog: `local GID index N, local GID G, remote GID G`).
_PEER_RE = re.compile(r"from peer ([0-9a-fA-F.:]+(?:%\w+)?)")
_LGID_RE = re.compile(r"(?:localGid|local GID)\s*([0-9a-fA-F:.]*:[0-9a-fA-F:.]*)")
_RGID_RE = re.compile(r"(?:remoteGids?|remote GID)\s*([0-9a-fA-F:.]*:[0-9a-fA-F:.]*)")
_VENDOR_RE = re.compile(r"vendor[ _]err\s*=?\s*(\d+)")  # 2.28.9+: vendor_err=N
_GIDX_RE = re.compile(r"local GID index\s*(\d+)", re.IGNORECASE)
_ADDR_RE = re.compile(r"(?:to|from|address)\s+\[?([0-9]{1,3}(?:\.[0-9]{1,3}){3})")


@lru_cache(maxsize=8192)  # a failed job's ranks print the same message many times; the table is fixed per process
def classify(message: str) -> Kind | None:
    sig = table.match(message)
    return BY_NAME[sig.kind] if sig is not None else None


def details(message: str) -> dict:
    """What a failure line says about the two ends (peer address, GIDs, vendor error)."""
    out: dict = {}
    for key, rx in (("peer", _PEER_RE), ("local_gid", _LGID_RE), ("remote_gid", _RGID_RE),
                    ("vendor_err", _VENDOR_RE), ("gid_index", _GIDX_RE), ("address", _ADDR_RE)):
        m = rx.search(message)
        if m:
            out[key] = int(m.group(1)) if key in ("vendor_err", "gid_index") else m.group(1).rstrip(".:")
    return out
