"""The runbook set as a networkx DiGraph, and the checks that make it walkable.

Node keys are "runbook.node" (the graph itself is built by model.build_graph, on first use for a
cached set). build_set() resolves every `next` target (a node of the same
runbook, OTHER_RUNBOOK for its entry, or OTHER_RUNBOOK.node), builds the graph and checks:
unique runbook ids, every target exists, no cycles (the cycle is named), every node reachable
from the root runbook's entry, every check/question has all its outcomes, every dead end is a
known cause; a runbook's `rejoin:` names a stretch of another runbook that ends where it says
(_check_rejoin). Errors are located RunbookErrors like the loader's.
"""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx

from ..errors import RunbookError
from ..status import HEALTHY
from ..suggest import closest, hint
from .model import CauseLeaf, Check, HealthyLeaf, Question, Runbook, RunbookSet, build_graph
from .render import to_dot, to_mermaid

__all__ = ["build_graph", "build_set", "check_graph", "to_dot", "to_mermaid"]


def build_set(runbooks: Iterable[Runbook], root: str | None = None) -> RunbookSet:
    by_id: dict[str, Runbook] = {}
    for rb in runbooks:
        if rb.id in by_id:
            raise rb.loc.error(f"duplicate runbook id '{rb.id}' (also in {by_id[rb.id].loc})")
        by_id[rb.id] = rb
    if not by_id:
        raise RunbookError("no runbooks to load")
    _resolve_targets(by_id)
    rs = RunbookSet(by_id, _pick_root(by_id, root), build_graph(by_id))
    check_graph(rs)
    return rs


def _resolve_targets(by_id: dict[str, Runbook]) -> None:
    qualified = [f"{rb.id}.{n}" for rb in by_id.values() for n in rb.nodes]
    for rb in by_id.values():
        for node in rb.nodes.values():
            for outcome in getattr(node, "outcomes", {}).values():
                target = outcome.next
                other, dot, node_id = target.partition(".")
                if dot and other in by_id and node_id in by_id[other].nodes:
                    outcome.target = target
                elif not dot and target in rb.nodes:
                    outcome.target = f"{rb.id}.{target}"
                elif not dot and target in by_id:
                    outcome.target = f"{target}.{by_id[target].entry}"
                else:
                    pool = [*rb.nodes, *by_id, *qualified]
                    raise outcome.loc.error(f"unknown next target '{target}'", closest(target, pool))


def _pick_root(by_id: dict[str, Runbook], root: str | None) -> str:
    if root is not None:
        if root not in by_id:
            raise RunbookError(f"no runbook '{root}' among the loaded ones ({', '.join(by_id)}){hint(closest(root, by_id))}")
        return root
    if len(by_id) == 1:
        return next(iter(by_id))
    entered = {o.target.partition(".")[0] for rb in by_id.values() for n in rb.nodes.values()
               for o in getattr(n, "outcomes", {}).values() if o.target.partition(".")[0] != rb.id}
    candidates = [rb_id for rb_id in by_id if rb_id not in entered]
    if len(candidates) != 1:
        raise RunbookError(f"cannot tell the root runbook among {', '.join(by_id)}: name it (root=...)")
    return candidates[0]


def check_graph(rs: RunbookSet) -> None:
    graph = rs.graph
    for rb in rs.runbooks.values():
        for node in rb.nodes.values():
            _check_outcomes(node)
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        cycle = []
    if cycle:
        names = " -> ".join([u for u, _ in cycle] + [cycle[0][0]])
        last_from, last_to = cycle[-1][0], cycle[-1][1]
        outcome = next(o for o in rs.node(last_from).outcomes.values() if o.target == last_to)  # type: ignore[union-attr]
        raise outcome.loc.error(f"cycle in the runbook graph: {names}")
    reachable = nx.descendants(graph, rs.entry) | {rs.entry}
    for key in graph.nodes:
        if key not in reachable:
            raise rs.node(key).loc.error(f"node '{key}' is not reachable from the root entry '{rs.entry}'")
    for rb in rs.runbooks.values():
        _check_rejoin(rs, rb)


def _check_rejoin(rs: RunbookSet, rb: Runbook) -> None:
    """`rejoin: {at, until}`: two nodes of one other runbook; every way from `at` stays in that
    runbook and reaches `until` or a cause, never a healthy end of its own (the walk ends at this
    runbook's); `at` does not lead into this runbook (the walk would come round again); and this
    runbook has a healthy end to rejoin from."""
    rejoin = rb.rejoin
    if rejoin is None:
        return
    qualified = [n.key for n in rs.nodes() if n.runbook != rb.id]
    for name in (rejoin.at, rejoin.until):
        if name not in qualified:
            raise rejoin.loc.error(f"rejoin names '{name}', which is no node of another runbook", closest(name, qualified))
    other = rejoin.at.partition(".")[0]
    if rejoin.until.partition(".")[0] != other:
        raise rejoin.loc.error(f"rejoin 'at' and 'until' must be nodes of one runbook, got '{rejoin.at}' and '{rejoin.until}'")
    if not isinstance(rs.node(rejoin.at), (Check, Question)):
        raise rejoin.loc.error(f"rejoin 'at' must be a check or a question, and '{rejoin.at}' is a leaf")
    if not any(isinstance(n, HealthyLeaf) and n.verdict == HEALTHY for n in rb.nodes.values()):
        raise rejoin.loc.error(f"runbook '{rb.id}' has no healthy end to rejoin from")
    graph = rs.graph
    if f"{rb.id}.{rb.entry}" in nx.descendants(graph, rejoin.at):
        raise rejoin.loc.error(f"rejoin 'at' '{rejoin.at}' leads back into runbook '{rb.id}': the walk would come round again")
    seen, todo, reached = {rejoin.at}, [rejoin.at], False
    while todo:
        key = todo.pop()
        node = rs.node(key)
        if node.runbook != other or isinstance(node, HealthyLeaf):
            raise rejoin.loc.error(f"from rejoin 'at' '{rejoin.at}' the walk can reach '{key}' without passing "
                                   f"'{rejoin.until}': every way must stay in '{other}' and end there or at a cause")
        for target in graph.successors(key):
            if target == rejoin.until:
                reached = True
            elif target not in seen:
                seen.add(target)
                todo.append(target)
    if not reached:
        raise rejoin.loc.error(f"rejoin 'until' '{rejoin.until}' cannot be reached from '{rejoin.at}'")


def _check_outcomes(node) -> None:
    if isinstance(node, Check):
        missing = [o for o in ("yes", "no", "unknown") if o not in node.outcomes]
    elif isinstance(node, Question):
        missing = [o for o in ("unknown",) if o not in node.outcomes] or ([] if node.choices else ["a choice"])
    elif isinstance(node, (CauseLeaf, HealthyLeaf)):
        return
    else:  # pragma: no cover - the loader builds only the four kinds
        raise node.loc.error(f"node '{node.key}' is neither a check, a question nor a leaf")
    if missing:
        raise node.loc.error(f"node '{node.key}' has no '{missing[0]}' outcome")
