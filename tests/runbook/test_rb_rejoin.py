"""Runbook.rejoin: a detour's healthy end runs a stretch of another runbook, then ends at its own leaf.

The net-plugin branch (runbooks/plugin.yaml) branches off the trunk before its PCIe, NVLink, Xid,
ACS and IOMMU checks; `rejoin:` makes a plugin node run them too. The messages are asserted word
for word, like the loader's (test_rb_loader_errors.py).
"""

from __future__ import annotations

import pytest

from allreduce_doctor.errors import RunbookError
from allreduce_doctor.runbook.graph import build_set
from allreduce_doctor.runbook.loader import parse_runbook
from allreduce_doctor.runbook.walk import walk
from tests.runbook.helpers import FACTS, observations

MAIN = """\
runbook: m
title: Main
entry: a
nodes:
  a:
    title: No RDMA port
    why: Because.
    check: len(rdma.ports) == 0
    yes: {next: d, means: to the detour}
    no: {next: b, means: on}
    unknown: {next: b, means: on}
  b:
    title: X is not set
    why: Because.
    check: 'get(nccl.env, "X", "0") == "1"'
    yes: {next: bad, means: X set}
    no: {next: fork, means: X unset}
    unknown: {next: fork, means: not read}
  bad:
    cause: p2p_disabled_by_env
  fork:
    title: The fabric fork
    why: Because.
    check: len(rdma.ports) > 1
    yes: {next: fine, means: many}
    no: {next: fine, means: one}
    unknown: {next: fine, means: not read}
  fine:
    healthy: no_fault_found
    summary: Main fine.
"""

DETOUR = """\
runbook: d
title: Detour
entry: x
detour: true
rejoin: {at: m.b, until: m.fork}
nodes:
  x:
    title: Y is not set
    why: Because.
    check: 'get(nccl.env, "Y", "0") == "1"'
    yes: {next: dbad, means: Y set}
    no: {next: dfine, means: Y unset}
    unknown: {next: dfine, means: not read}
  dbad:
    cause: socket_fallback
  dfine:
    healthy: no_fault_found
    summary: Detour fine.
"""


def load(detour: str = DETOUR):
    return build_set([parse_runbook(MAIN, "m.yaml", FACTS), parse_runbook(detour, "d.yaml", FACTS)], "m")


def error_of(detour: str) -> str:
    with pytest.raises(RunbookError) as info:
        load(detour)
    return str(info.value)


def test_a_healthy_detour_runs_the_rejoined_stretch_and_ends_at_its_own_leaf():
    diag = walk(load(), observations(rdma_ports=[], nccl_env={}))
    assert [(s.node, s.outcome, s.badge) for s in diag.path] == [
        ("m.a", "yes", "pass"), ("d.x", "no", "pass"), ("m.b", "no", "pass")]
    assert (diag.verdict, diag.healthy["node"], diag.healthy["summary"]) == ("healthy", "d.dfine", "Detour fine.")


def test_a_fault_in_the_rejoined_stretch_is_the_root_cause():
    diag = walk(load(), observations(rdma_ports=[], nccl_env={"X": "1"}))
    assert [s.node for s in diag.path] == ["m.a", "d.x", "m.b"]
    assert (diag.verdict, diag.root_cause["id"], diag.root_cause["node"]) == ("fault", "p2p_disabled_by_env", "m.bad")


def test_a_detour_that_ends_at_a_cause_does_not_rejoin():
    diag = walk(load(), observations(rdma_ports=[], nccl_env={"Y": "1"}))
    assert [s.node for s in diag.path] == ["m.a", "d.x"]
    assert diag.root_cause["id"] == "socket_fallback"


def test_an_unknown_in_the_rejoined_stretch_makes_the_verdict_inconclusive():
    diag = walk(load(), observations(rdma_ports=[]))  # nccl.env missing: d.x and m.b are unknown
    assert diag.verdict == "inconclusive"
    assert [i["node"] for i in diag.inconclusive] == ["d.x", "m.b"]


def test_the_main_walk_is_unchanged():
    diag = walk(load(), observations(rdma_ports=[{"name": "mlx5_0/1"}], nccl_env={}))
    assert [s.node for s in diag.path] == ["m.a", "m.b", "m.fork"]
    assert diag.healthy["node"] == "m.fine"


@pytest.mark.parametrize("rejoin, message", [
    ("{at: m.zz, until: m.fork}", "d.yaml:5:1: rejoin names 'm.zz', which is no node of another runbook (at rejoin)"),
    ("{at: m.fok, until: m.fork}",
     "d.yaml:5:1: rejoin names 'm.fok', which is no node of another runbook (at rejoin) did you mean 'm.fork'?"),
    ("{at: d.x, until: m.fork}", "d.yaml:5:1: rejoin names 'd.x', which is no node of another runbook (at rejoin)"),
    ("{at: m.bad, until: m.fork}", "d.yaml:5:1: rejoin 'at' must be a check or a question, and 'm.bad' is a leaf (at rejoin)"),
    ("{at: m.a, until: m.fork}",
     "d.yaml:5:1: rejoin 'at' 'm.a' leads back into runbook 'd': the walk would come round again (at rejoin)"),
    ("{at: m.b, until: m.a}", "d.yaml:5:1: from rejoin 'at' 'm.b' the walk can reach 'm.fine' without passing 'm.a': "
                             "every way must stay in 'm' and end there or at a cause (at rejoin)"),
    ("{at: m.b}", "d.yaml:5:1: missing required key 'until' (at rejoin)"),
    ("{at: b, until: m.fork}", "d.yaml:5:14: rejoin 'at' must name a node of another runbook as RUNBOOK.NODE, got 'b' (at rejoin.at)"),
    ("{at: m.b, until: m.fork, from: m.a}", "d.yaml:5:34: unknown key 'from' (at rejoin.from)"),
])
def test_a_wrong_rejoin_is_one_located_line(rejoin, message):
    assert error_of(DETOUR.replace("{at: m.b, until: m.fork}", rejoin)) == message


def test_a_rejoin_needs_a_healthy_end_to_rejoin_from():
    no_healthy = DETOUR.replace("no: {next: dfine", "no: {next: dbad").replace("unknown: {next: dfine", "unknown: {next: dbad")
    no_healthy = no_healthy.replace("  dfine:\n    healthy: no_fault_found\n    summary: Detour fine.\n", "")
    assert error_of(no_healthy) == "d.yaml:5:1: runbook 'd' has no healthy end to rejoin from (at rejoin)"


def test_the_shipped_plugin_branch_rejoins_the_trunk_before_its_fabric_fork():
    from allreduce_doctor.doctor import Doctor

    rejoin = Doctor.load().runbooks.runbooks["plugin"].rejoin
    assert (rejoin.at, rejoin.until) == ("trunk.pcie_gpu", "trunk.branch")
