"""Drain or resume this node in Slurm the way LBNL NHC does, through scontrol (argv, timeout).

The rules are NHC's (mej/nhc helpers/node-mark-offline and helpers/node-mark-online):
- drain: a node already drained, failing or in maintenance for a reason that is not ours
  keeps its reason (never overwritten); a DOWN node is left alone;
- resume: only a node whose reason's first word is our leader, "ard:" (or "allreduce-doctor:",
  the leader before 0.2); a node drained by someone else, or with no reason at all, stays drained.
  The whole first word is compared: "allreduce-doctor:x" or "ard:s" is someone else's.

The reason is "ard: CAUSE": short, because `sinfo -R` shows "the first 20 characters of the
reason field" (Slurm doc/man/man1/sinfo.1, --list-reasons, format "%20E"); "ard: " leaves 15
of them to the cause, "allreduce-doctor: " left 2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.scontrol import ScontrolError, scontrol

SCONTROL_TIMEOUT = 10.0
# Slurm node names: letters, digits, '.', '_' and '-' (NodeName in slurm.conf(5)); anything
# else would be an injected scontrol keyword.
NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
STATE = re.compile(r"(?:^|\s)State=(\S+)")
# `scontrol show node` prints "Reason=TEXT [USER@TIME]" as the rest of its line.
REASON = re.compile(r"^\s*Reason=(.*?)(?:\s+\[[^\]]*\])?\s*$", re.M)
DRAIN_LEADER = "ard:"
OUR_LEADERS = (DRAIN_LEADER, "allreduce-doctor:")  # the second: reasons set before 0.2
OFFLINE_FLAGS = ("DRAIN", "FAIL", "MAINT")  # DRAIN, DRAINED, DRAINING, FAIL, FAILING, MAINT


@dataclass
class NodeState:
    state: str  # as scontrol prints it: IDLE+DRAIN, MIXED, DOWN+NOT_RESPONDING
    reason: str  # "" when none

    @property
    def flags(self) -> list[str]:
        return self.state.upper().split("+")

    @property
    def offline(self) -> bool:
        return any(f.startswith(OFFLINE_FLAGS) for f in self.flags)

    @property
    def down(self) -> bool:
        return self.flags[0].startswith("DOWN")

    @property
    def ours(self) -> bool:
        words = self.reason.split(maxsplit=1)
        return bool(words) and words[0] in OUR_LEADERS


def check_node_name(node: str) -> str:
    if not NODE_NAME.fullmatch(node or ""):
        raise DoctorError(f"--node {node!r}: not a Slurm node name (letters, digits, '.', '_', '-')")
    return node


def _scontrol(host, args: list[str], timeout: float) -> str:
    return scontrol(host, args, max(0.1, min(SCONTROL_TIMEOUT, timeout)), "healthcheck/scontrol")


def node_state(host, node: str, timeout: float = SCONTROL_TIMEOUT) -> NodeState:
    text = _scontrol(host, ["show", "node", node], timeout)
    state = STATE.search(text)
    if state is None:
        raise ScontrolError(f"scontrol show node {node} printed no State= field")
    reason = REASON.search(text)
    value = reason.group(1).strip() if reason else ""
    return NodeState(state.group(1), "" if value in ("(null)", "None") else value)


def drain(host, node: str, cause: str, timeout: float = SCONTROL_TIMEOUT) -> str:
    """Drain `node` with reason "ard: CAUSE"; what was done, in words."""
    reason = f"{DRAIN_LEADER} {cause}"
    current = node_state(host, node, timeout)
    if current.down:
        return f"not draining {node}: it is {current.state} (left as it is)"
    if current.offline and not current.ours:
        why = f"Reason={current.reason}" if current.reason else "no reason set"
        return f"not draining {node}: already {current.state} by someone else ({why})"
    if current.offline and current.reason == reason:
        return f"{node} is already drained: {reason}"
    _scontrol(host, ["update", f"nodename={node}", "state=drain", f"reason={reason}"], timeout)
    return f"drained {node}: {reason}"


def resume(host, node: str, timeout: float = SCONTROL_TIMEOUT) -> str:
    """Resume `node` only when allreduce-doctor drained it; what was done, in words."""
    current = node_state(host, node, timeout)
    if not current.offline and not current.down:
        return f"{node} is not drained ({current.state}): nothing to resume"
    if not current.ours:
        why = f"Reason={current.reason}" if current.reason else "no reason set"
        return f"not resuming {node}: drained by someone else ({why})"
    _scontrol(host, ["update", f"nodename={node}", "state=resume"], timeout)
    return f"resumed {node} (was: {current.reason})"
