"""NCCL environment overrides judged from the variables alone (and the job's NCCL version), so a
node's job and pasted `export` lines decide them the same way (tests/evidence/test_same_rule_both_ways.py).
NCCL's own rules (how it reads a level, its defaults per tag) live in nccl_rules/, with their sources.
"""

from __future__ import annotations

from allreduce_doctor.domain import version_tuple
from allreduce_doctor.nccl_rules import defaults, gdr

AR_PARAM_SINCE = defaults.AR_PARAM_SINCE
IB_TIMEOUT_DEFAULTS = defaults.IB_TIMEOUT_DEFAULTS
IB_RETRY_CNT_DEFAULT = defaults.IB_RETRY_CNT_DEFAULT
IB_TRANSPORT_VARS = ("NCCL_IB_ADAPTIVE_ROUTING", "NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT")
GDR_FORBIDDING_LEVELS = gdr.BELOW_PIX
ib_timeout_default = defaults.ib_timeout_default


def user_level(raw, version=None) -> str | None:
    return gdr.user_level(raw, version)


def gdr_level_forbids(env: dict, version=None) -> str | None:
    """Why NCCL_NET_GDR_LEVEL turns GPUDirect RDMA off for every GPU whatever the topology, or None."""
    raw = env.get("NCCL_NET_GDR_LEVEL")
    return None if raw is None else gdr.level_forbids_everywhere(raw, version)


def p2p_forbidden(env: dict, version=None) -> bool:
    return gdr.p2p_forbidden(env, version)


def ib_overrides(env: dict, fabric: str | None, version) -> tuple[list[dict], str | None]:
    """(findings, undecided): IB transport variables set against NCCL's defaults. `undecided`
    says what is missing to judge a value that is a fault only for some NCCL versions."""
    found, undecided = [], None
    parsed = version_tuple(version)
    ar = env.get("NCCL_IB_ADAPTIVE_ROUTING")
    if ar is not None and defaults.param_int(ar) == 0 and fabric in ("ib", None):
        if parsed is not None and parsed < AR_PARAM_SINCE:
            pass  # the variable does not exist before 2.16: nothing changes
        elif fabric is None:
            undecided = "NCCL_IB_ADAPTIVE_ROUTING=0 matters on InfiniBand only: the fabric is not known"
        else:
            found.append({"var": "NCCL_IB_ADAPTIVE_ROUTING", "value": ar,
                          "why": "NCCL turns adaptive routing on by default on InfiniBand; 0 keeps one "
                                 "write-with-immediate per message, which a fabric with adaptive routing reorders"})
    fault, why = defaults.ib_timeout_verdict(env.get("NCCL_IB_TIMEOUT"), version)
    if fault:
        found.append({"var": "NCCL_IB_TIMEOUT", "value": env["NCCL_IB_TIMEOUT"], "why": why})
    elif fault is None:
        undecided = why
    retry = defaults.param_int(env.get("NCCL_IB_RETRY_CNT"))
    if retry is not None and retry < IB_RETRY_CNT_DEFAULT:
        found.append({"var": "NCCL_IB_RETRY_CNT", "value": env["NCCL_IB_RETRY_CNT"],
                      "why": f"below NCCL's default {IB_RETRY_CNT_DEFAULT}: a lost packet fails the connection sooner"})
    return found, undecided
