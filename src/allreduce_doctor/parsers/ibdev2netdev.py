"""`ibdev2netdev` (mlnx-tools / MLNX_OFED): RDMA device port -> netdev and its state.

Plain form: `mlx5_0 port 1 ==> ibp24s0 (Down)`. The -v form puts the PCI address and a
description before the port: `0000:1a:00.0 mlx5_0 (MT4129 - ...) fw 28.39 port 1 (ACTIVE)
==> ibp26s0 (Up)`. Lines without `==>` (prompts, prose) are skipped.
"""

from __future__ import annotations

import re

from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, lines

_LINK_RE = re.compile(
    r"\bport\s+([0-9]{1,9})\s*(?:\([^)]*\)\s*)?==>\s*(\S+)\s*\(\s*(\w+)\s*\)", re.ASCII
)
_BDF_RE = re.compile(r"([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")


@parser("ibdev2netdev")
def parse_ibdev2netdev(text: str) -> list[dict]:
    """Empty output (no RDMA devices) gives []."""
    rows: list[dict] = []
    for line in lines(text):
        if "==>" not in line:
            continue
        m = _LINK_RE.search(line)
        if not m:
            continue
        tokens = line[: m.start()].split()
        if tokens and _BDF_RE.fullmatch(tokens[0]):
            tokens = tokens[1:]  # -v: PCI address first
        if not tokens:
            continue
        rows.append(
            {
                "device": tokens[0],
                "port": int(m.group(1)),
                "netdev": m.group(2),
                "up": m.group(3).lower() == "up",
            }
        )
    if text.strip() and not rows:
        raise fail("ibdev2netdev lines like 'mlx5_0 port 1 ==> ib0 (Up)'", text)
    return rows
