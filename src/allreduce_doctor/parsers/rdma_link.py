"""`rdma link show` (iproute2 rdma/link.c): one line per port, the kernel's netlink view of it.

    link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 12 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP
    link mlx5_2/1 state DOWN physical_state DISABLED netdev ens1f1np1

iproute2 4.17-5.4 printed `0/1: mlx5_0/1: state ...` (the 2019 rewrite, b0a688a5, gave `link`).
The kernel puts the subnet prefix, LID, SM LID and LMC only for a port that speaks InfiniBand
(drivers/infiniband/core/nldev.c fill_port_info,
`rdma_protocol_ib`), so a port with a LID is InfiniBand and one without is Ethernet (RoCE); the
states are link_state_to_str / phys_state_to_str's names (DOWN, INIT, ACTIVE; POLLING, DISABLED, LINK_UP).
"""

from __future__ import annotations

import re

from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, lines, require

_LINE_RE = re.compile(r"^\s*(?:link\s+|\d+/\d+:\s+)([\w.-]+)/(\d+):?\s+(.*)$", re.ASCII)
_FIELD_RE = re.compile(r"\b(subnet_prefix|lid|sm_lid|lmc|state|physical_state|netdev)\s+(\S+)", re.ASCII)


@parser("rdma_link")
def parse_rdma_link(text: str) -> dict:
    """{"ports": {"DEV/PORT": {state, physical_state, link_layer, lid, sm_lid, netdev}}}."""
    what = "`rdma link show` lines (link DEV/PORT ... state STATE physical_state STATE)"
    require(text, what)
    ports: dict[str, dict] = {}
    for line in lines(text):
        m = _LINE_RE.match(line)
        if m is None:
            continue
        fields = dict(_FIELD_RE.findall(m.group(3)))
        if "state" not in fields:
            continue
        lid = fields.get("lid")
        ports[f"{m.group(1)}/{m.group(2)}"] = {
            "state": fields["state"], "physical_state": fields.get("physical_state"),
            "link_layer": "InfiniBand" if lid is not None else "Ethernet",
            "lid": int(lid) if lid and lid.isdigit() else None,
            "sm_lid": int(fields["sm_lid"]) if fields.get("sm_lid", "").isdigit() else None,
            "netdev": fields.get("netdev")}
    if not ports:
        raise fail(what, text[:80])
    return {"ports": ports}
