"""NCCL_NET_GDR_LEVEL (and NCCL_P2P_LEVEL) as NCCL reads them, and whether GPUDirect RDMA stays on.

ncclGetLevel (src/graph/paths.cc, v2.12.12-1..v2.30.7-1): the value is compared with strcmp against
topoPathTypeStr[0..PATH_SYS] (case-sensitive: `loc` is no level), else a leading digit is the old
numbering levelsOldToNew = {LOC, PIX, PXB, PHB, SYS, SYS} (strtol, capped at 5); anything else is
ignored and NCCL keeps its default. topoPathTypeStr (src/graph/topo.cc) grew over the tags:
  v2.7.8-1    LOC NVL PIX PXB PHB SYS;  v2.8.3-1 NVB after NVL
  v2.12.7-1   LOC NVL NVB PIX PXB PXN PHB SYS (DIS)      (v2.21.5-1 adds NET after SYS)
  v2.26.2-1   C2C after NVB
  v2.27.3-1   P2C after PXN;  v2.27.5-1 on: P2C before PXN (LOC NVL NVB C2C PIX PXB P2C PXN PHB SYS)
ncclTopoCheckGdr: GDR is off for a GPU-NIC pair when the path type (the PXN's intermediate GPU's)
is farther than the level. The default level is PXB; on Grace (GPU-CPU path C2C, GPU-NIC P2C):
  v2.26.x     NCCL_NET_GDR_C2C=0 by default: the path is PHB, beyond PXB, so GDR off by default;
  v2.27-v2.28 NET_GDR_C2C=1 by default rewrites a P2C distance to C2C before the comparison, so any
              level from C2C up (PXB copied from x86 scripts included) keeps GDR;
  v2.29.2-1+  the default level is P2C when NET_GDR_C2C (1), the distance stays P2C, and a user level
              replaces it: NCCL_NET_GDR_LEVEL=PXB (or PIX) turns GDR off on GB200.
"""

from __future__ import annotations

import re

from allreduce_doctor.nccl_rules.versions import version_tuple

_BASE = ("LOC", "NVL", "NVB", "PIX", "PXB", "PXN", "PHB", "SYS")
_TABLES = (  # (since, topoPathTypeStr up to PATH_SYS), newest first
    ((2, 27, 5), ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS")),
    ((2, 27, 3), ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "P2C", "PHB", "SYS")),
    ((2, 26, 2), ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "PXN", "PHB", "SYS")),
    ((2, 12, 7), _BASE),
    ((2, 8, 3), ("LOC", "NVL", "NVB", "PIX", "PXB", "PHB", "SYS")),
    ((0,), ("LOC", "NVL", "PIX", "PXB", "PHB", "SYS")),  # v2.7.8-1
)
OLD_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS", "SYS")  # levelsOldToNew
# Names every table places below PIX: a level at one of them forbids GDR on any PCIe path.
BELOW_PIX = ("LOC", "NVL", "NVB", "C2C")
# nvidia-smi topo -m GPU-NIC cells as NCCL's path types: NODE (host bridges of one NUMA node) is a
# CPU node to NCCL (PHB); SYS crosses the SMP interconnect. nvidia-smi's PXB may be NCCL's PIX on a
# Broadcom PEX switch in base mode (topo.cc ncclTopoFlattenBcmSwitches fuses its two levels).
SMI_TO_NCCL = {"PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "NODE": "PHB", "SYS": "SYS"}


def path_types(version) -> tuple[str, ...] | None:
    """topoPathTypeStr[0..PATH_SYS] at the version; None when unknown."""
    parsed = version_tuple(version)
    if parsed is None:
        return None
    return next(table for since, table in _TABLES if parsed >= since)


def _table(version) -> tuple[str, ...]:
    """The version's table, else the newest (every name the older tables hold, in the same order)."""
    return path_types(version) or _TABLES[0][1]


def _names_anywhere() -> set[str]:
    return {n for _, table in _TABLES for n in table}


def user_level(raw, version=None) -> str | None:
    """The level ncclGetLevel makes of the value, None when NCCL ignores it (its default stays).
    With the version unknown a name only some tags know (C2C, P2C) reads as that name."""
    value = str(raw)
    table = path_types(version)
    if value in (table if table is not None else _names_anywhere()):
        return value
    if value[:1].isdigit():
        return OLD_LEVELS[min(strtol0(value), len(OLD_LEVELS) - 1)]
    return None


def strtol0(text: str) -> int:
    """C's strtol(text, NULL, 0): leading space, a sign, then 0x hex, 0 octal or decimal digits."""
    m = re.match(r"\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)", text)
    if not m:
        return 0
    body = m.group(2)
    value = int(body, 16) if body[:2].lower() == "0x" else int(body, 8) if body.startswith("0") else int(body)
    return -value if m.group(1) == "-" else value


def level_forbids_everywhere(raw, version=None) -> str | None:
    """Why the level turns GDR off on every GPU-NIC path (a NIC is at least PIX from a GPU), or None."""
    level = user_level(raw, version)
    if level not in BELOW_PIX:
        return None
    return f"NCCL_NET_GDR_LEVEL={raw} is below PIX: NCCL disables GPUDirect RDMA for every GPU"


def gdr_on_path(raw, smi_path: str, version=None, grace: bool = False, bcm: bool | None = None,
                c2c: bool = True) -> bool | None:
    """Whether NCCL keeps GDR for a GPU whose NIC is `smi_path` (nvidia-smi topo -m) with
    NCCL_NET_GDR_LEVEL=raw. None when it cannot be told (version, Broadcom switches, Grace before
    2.27). `bcm`: the PCIe switches are Broadcom PEX (True), known not to be (False), unknown (None).
    `grace`: the GPU hangs off a Grace CPU by C2C and the NIC off that CPU's PCIe (GB200, GH200);
    `c2c`: NCCL_NET_GDR_C2C (default 1 from v2.27.3-1)."""
    level = user_level(raw, version)
    if raw is not None and level is None:
        raw = None  # ignored: NCCL's default applies
    parsed = version_tuple(version)
    if grace:
        return _grace(level, parsed, c2c)
    nccl_path = SMI_TO_NCCL.get(str(smi_path))
    if nccl_path is None:
        return None
    table = _table(version)
    limit = table.index(level) if level is not None else table.index("PXB")
    distance = table.index(nccl_path)
    if distance <= limit:
        return True
    if nccl_path == "PXB" and limit >= table.index("PIX") and bcm is not False:
        return None  # a flattened Broadcom switch is PIX to NCCL
    return False


def _grace(level: str | None, parsed, c2c: bool) -> bool | None:
    """A Grace GPU and a NIC on its CPU's PCIe: NCCL's path P2C (paths.cc "max == PATH_PHB && min ==
    PATH_C2C", from v2.27.3-1). Before v2.27 not decided here."""
    if parsed is None or parsed < (2, 27, 3):
        return None
    table = _table(".".join(map(str, parsed)))
    if parsed < (2, 29, 2):  # NET_GDR_C2C rewrites P2C to C2C before the comparison; default level PXB
        return table.index("C2C" if c2c else "P2C") <= table.index(level or "PXB")
    return table.index("P2C") <= table.index(level or ("P2C" if c2c else "PXB"))


def p2p_forbidden(env: dict, version=None) -> bool:
    """NCCL_P2P_DISABLE=1 (strtol) or NCCL_P2P_LEVEL at LOC: no P2P between the node's GPUs."""
    if strtol0(str(env.get("NCCL_P2P_DISABLE", ""))) == 1:
        return True
    raw = env.get("NCCL_P2P_LEVEL")
    return raw is not None and user_level(raw, version) == "LOC"
