"""The NCCL defaults the checks compare a variable with, per tag (NVIDIA/nccl, the NCCL_PARAM lines
of src/transport/net_ib.cc; net_ib/*.cc from v2.29), and how NCCL reads the variable.

- NCCL_IB_TIMEOUT: NCCL_PARAM(IbTimeout, "IB_TIMEOUT", 14) v2.3.5-5..v2.13.4-1, 18 v2.14.3-1..v2.22.3-1,
  20 from v2.23.4-1 (env.rst at v2.30.7-1: "20 (since 2.23; it was 18 since 2.14, and 14 before that)").
  It is the QP's local ACK timeout, 4.096 us x 2^t; "0 or >= 32 will result in an infinite timeout"
  (env.rst); "the best value is dependent on the size of the network". A lowered value fails a busy
  fabric's connections (IBV_WC_RETRY_EXC_ERR, completion error 12) instead of waiting. The judgement:
  below the job's default AND below 18 is a fault (a wait shorter than any default NCCL shipped since
  v2.14.3-1); 18 or 19 on NCCL >= 2.23 is the default NCCL itself shipped for nine minor releases,
  a choice for a small fabric: not a fault.
- NCCL_IB_RETRY_CNT: NCCL_PARAM(IbRetryCnt, "IB_RETRY_CNT", 7) at every tag v2.3.5-5..v2.30.7-1.
- NCCL_IB_ADAPTIVE_ROUTING: NCCL_PARAM(IbAdaptiveRouting, "IB_ADAPTIVE_ROUTING", -2) from v2.16.2-1;
  ncclIbInit turns AR on for InfiniBand ports when unset.
NCCL_PARAM reads a variable with strtoll(str, NULL, 0) (src/misc/param.cc ncclLoadParam).
"""

from __future__ import annotations

from allreduce_doctor.nccl_rules.gdr import strtol0
from allreduce_doctor.nccl_rules.versions import version_tuple

IB_TIMEOUT_DEFAULTS = (((2, 23, 4), 20), ((2, 14, 3), 18), ((0,), 14))  # (since, default), newest first
IB_TIMEOUT_FLOOR = 18  # the default of v2.14.3-1..v2.22.3-1
IB_TIMEOUT_INFINITE = (0, 32)  # 0, and >= 32
IB_RETRY_CNT_DEFAULT = 7
AR_PARAM_SINCE = (2, 16)


def ib_timeout_default(version) -> int | None:
    parsed = version_tuple(version)
    if parsed is None:
        return None
    return next(default for since, default in IB_TIMEOUT_DEFAULTS if parsed >= since)


def param_int(raw) -> int | None:
    """A variable as NCCL_PARAM reads it (strtoll base 0); None when unset."""
    if raw is None or str(raw) == "":
        return None  # strlen(str) > 0 is required: an empty value keeps the default
    return strtol0(str(raw))


def ib_timeout_verdict(raw, version) -> tuple[bool | None, str]:
    """(fault, why) for NCCL_IB_TIMEOUT: True a fault, False not, None undecided (the version)."""
    value = param_int(raw)
    if value is None:
        return False, "unset"
    if value == IB_TIMEOUT_INFINITE[0] or value >= IB_TIMEOUT_INFINITE[1]:
        return False, f"{value}: an infinite timeout (env.rst)"
    default = ib_timeout_default(version)
    oldest = IB_TIMEOUT_DEFAULTS[-1][1]
    if value < oldest or (default is not None and value < min(default, IB_TIMEOUT_FLOOR)):
        shown = default if default is not None else oldest
        return True, (f"below NCCL's default {shown}: connections fail under congestion (retry exceeded) "
                      "instead of waiting")
    if default is None and value < IB_TIMEOUT_FLOOR:
        return None, (f"NCCL_IB_TIMEOUT={value} is below the default of NCCL >= 2.14 (18) or 2.23 (20): "
                      "the job's NCCL version is not known")
    if default is not None and value < default:
        return False, (f"{value} is below NCCL {version}'s default {default} but not below 18, NCCL's own "
                       "default for v2.14.3-1..v2.22.3-1")
    return False, "at or above NCCL's default"
