"""NCCL environment overrides judged from the variables alone (and the job's NCCL version), so a
node's job and pasted `export` lines decide them the same way (tests/evidence/test_same_rule_both_ways.py).

Every rule cites NVIDIA/nccl source at the tags named:
- NCCL_NET_GDR_LEVEL: src/graph/paths.cc ncclTopoCheckGdr / ncclGetLevel (v2.12 to v2.30). The
  value is matched with strcmp against topoPathTypeStr ("LOC", "NVL", "NVB", ... "PIX", ...), a
  leading digit in the old numbering (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4+ SYS); anything else is
  ignored. GPUDirect RDMA is used only when the GPU-NIC distance is <= the level, and a NIC is at
  least PIX from a GPU (PATH_PIX is the first PCIe path type), so a level below PIX forbids it.
- NCCL_P2P_LEVEL / NCCL_P2P_DISABLE: the same ncclGetLevel (ncclTopoCheckP2p): NCCL_P2P_DISABLE
  read with strtol, 1 meaning LOC; the level matched with strcmp, so it is case-sensitive at every
  tag from v2.12.12-1 to v2.30.7-1: "loc" is no level, NCCL keeps its default and P2P stays on.
- NCCL_IB_ADAPTIVE_ROUTING: src/transport/net_ib.cc (net_ib/init.cc from v2.29) ncclIbInit,
  "Enable ADAPTIVE_ROUTING by default on IB networks": ar = 1 on InfiniBand ports, overridden by
  the variable (-2 = unset); the parameter exists from v2.16.2-1.
- NCCL_IB_TIMEOUT / NCCL_IB_RETRY_CNT: NCCL_PARAM(IbTimeout, "IB_TIMEOUT", 14) up to v2.13.4-1,
  18 from v2.14.3-1, 20 from v2.23.4-1 (net_ib/connect.cc from v2.29); IB_RETRY_CNT 7 in all.
  They become the QP's local ACK timeout (4.096 us x 2^timeout) and its retry count
  (qpAttr.timeout, qpAttr.retry_cnt in ncclIbRtsQp): lower values fail a busy fabric's
  connections with IBV_WC_RETRY_EXC_ERR (completion error 12) instead of waiting.
"""

from __future__ import annotations

from allreduce_doctor.domain import version_tuple

GDR_FORBIDDING_LEVELS = ("LOC", "NVL", "NVB")  # below PATH_PIX in every topoPathTypeStr
AR_PARAM_SINCE = (2, 16)
IB_TIMEOUT_DEFAULTS = (((2, 23), 20), ((2, 14), 18), ((0,), 14))  # (since, default), newest first
IB_RETRY_CNT_DEFAULT = 7
IB_TRANSPORT_VARS = ("NCCL_IB_ADAPTIVE_ROUTING", "NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT")


# topoPathTypeStr (src/graph/topo.cc; C2C and P2C from v2.2x, NET from v2.1x) and the old numbering
# (paths.cc levelsOldToNew: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4 and above SYS).
PATH_TYPES = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS")
OLD_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS", "SYS")


def user_level(raw) -> str | None:
    """A level variable as ncclGetLevel reads it: a path type name (strcmp: case-sensitive), else a
    leading digit in the old numbering; None when NCCL ignores the value and keeps its default."""
    value = str(raw)
    if value in PATH_TYPES:
        return value
    number = _leading_int(value)
    return None if number is None else OLD_LEVELS[min(number, len(OLD_LEVELS) - 1)]


def gdr_level_forbids(env: dict) -> str | None:
    """Why NCCL_NET_GDR_LEVEL turns GPUDirect RDMA off for every GPU, or None."""
    raw = env.get("NCCL_NET_GDR_LEVEL")
    if raw is None or user_level(raw) not in GDR_FORBIDDING_LEVELS:
        return None
    return f"NCCL_NET_GDR_LEVEL={raw} is below PIX: NCCL disables GPUDirect RDMA for every GPU"


def p2p_forbidden(env: dict) -> bool:
    """NCCL_P2P_DISABLE=1 or NCCL_P2P_LEVEL at LOC: no P2P between the GPUs of the node."""
    if _leading_int(str(env.get("NCCL_P2P_DISABLE", "")).lstrip()) == 1:
        return True
    raw = env.get("NCCL_P2P_LEVEL")
    return raw is not None and user_level(raw) == "LOC"


def _leading_int(text: str) -> int | None:
    digits = ""
    for ch in text:
        if not ch.isdigit():
            break
        digits += ch
    return int(digits) if digits else None


def ib_timeout_default(version) -> int | None:
    parsed = version_tuple(version)
    if parsed is None:
        return None
    return next(default for since, default in IB_TIMEOUT_DEFAULTS if parsed >= since)


def ib_overrides(env: dict, fabric: str | None, version) -> tuple[list[dict], str | None]:
    """(findings, undecided): IB transport variables set against NCCL's defaults. `undecided`
    says what is missing to judge a value that is a fault only for some NCCL versions."""
    found, undecided = [], None
    parsed = version_tuple(version)
    ar = env.get("NCCL_IB_ADAPTIVE_ROUTING")
    if ar is not None and _leading_int(str(ar).strip()) == 0 and fabric in ("ib", None):
        if parsed is not None and parsed < AR_PARAM_SINCE:
            pass  # the variable does not exist before 2.16: nothing changes
        elif fabric is None:
            undecided = "NCCL_IB_ADAPTIVE_ROUTING=0 matters on InfiniBand only: the fabric is not known"
        else:
            found.append({"var": "NCCL_IB_ADAPTIVE_ROUTING", "value": ar,
                          "why": "NCCL turns adaptive routing on by default on InfiniBand; 0 keeps one "
                                 "write-with-immediate per message, which a fabric with adaptive routing reorders"})
    timeout = _leading_int(str(env.get("NCCL_IB_TIMEOUT", "")).strip())
    if timeout is not None:
        default = ib_timeout_default(version)
        oldest = IB_TIMEOUT_DEFAULTS[-1][1]
        if timeout < (default if default is not None else oldest):
            found.append({"var": "NCCL_IB_TIMEOUT", "value": env["NCCL_IB_TIMEOUT"],
                          "why": f"below NCCL's default {default if default is not None else oldest}: "
                                 "connections fail under congestion (retry exceeded) instead of waiting"})
        elif default is None and timeout < IB_TIMEOUT_DEFAULTS[0][1]:
            undecided = (f"NCCL_IB_TIMEOUT={timeout} is below the default of NCCL >= 2.14 (18) or 2.23 (20): "
                         "the job's NCCL version is not known")
    retry = _leading_int(str(env.get("NCCL_IB_RETRY_CNT", "")).strip())
    if retry is not None and retry < IB_RETRY_CNT_DEFAULT:
        found.append({"var": "NCCL_IB_RETRY_CNT", "value": env["NCCL_IB_RETRY_CNT"],
                      "why": f"below NCCL's default {IB_RETRY_CNT_DEFAULT}: a lost packet fails the connection sooner"})
    return found, undecided
