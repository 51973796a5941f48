"""Whether a RoCE GID entry routes between hosts: a RoCE v2 GID (UDP/IP, routable) of an IPv4-mapped or
global IPv6 address. RoCE v1 is an Ethernet frame with no IP header (it stays in one L2 domain);
a link-local (fe80::/10) address is not routed; an empty entry is no address (Linux
drivers/infiniband/core/cache.c: gid_attrs/types "IB/RoCE v1" / "RoCE v2"; NCCL ncclIbGetGidIndex
prefers a v2 IPv4 GID for the same reason, net_ib v2.21.5-1..v2.30.7-1).
"""

from __future__ import annotations

ROUTABLE_KINDS = ("ipv4", "global")
NEVER_ROUTABLE_KINDS = ("link_local", "empty")


def gid_routable(kind, version) -> bool | None:
    """True: routes; False: cannot; None: the entry does not say (type or address unread)."""
    if kind in NEVER_ROUTABLE_KINDS or version == 1:
        return False
    if version == 2 and kind in ROUTABLE_KINDS:
        return True
    return None
