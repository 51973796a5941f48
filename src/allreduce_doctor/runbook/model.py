"""The runbook model: what the loader builds and the walk follows. Plain dataclasses.

A node is a Check (condition over facts), a Question (asked of the operator), a CauseLeaf
(a root cause from causes.CAUSES, whose texts it shows) or a HealthyLeaf (a "no fault" outcome). Node keys across a
RunbookSet are "runbook.node". Every node and outcome keeps the Location it was read from, so
graph errors found later still point at file:line:col.
"""

from __future__ import annotations

from dataclasses import dataclass, field  # every class has a docstring: else dataclass() builds one at import
from typing import TYPE_CHECKING

from ..yamlsrc import Location  # noqa: F401 - nodes and outcomes carry it
from .causes import OWNERS, SEVERITIES  # noqa: F401 - the catalogue defines them

if TYPE_CHECKING:
    import networkx as nx

    from .causes import CauseInfo
    from .conditions import Condition



@dataclass
class Outcome:
    """One way out of a node: its label, the node it leads to, and what taking it means."""

    label: str  # yes / no / unknown / a choice name
    next: str  # as written: node, RUNBOOK or RUNBOOK.node
    means: str
    loc: Location  # of the `next` value
    target: str = ""  # resolved "runbook.node", filled when the set is built


@dataclass
class _Node:
    """What every runbook node has: its id, its runbook and where it is written."""

    id: str
    runbook: str
    loc: Location  # of the node's key under `nodes:`

    @property
    def key(self) -> str:
        return f"{self.runbook}.{self.id}"

    @property
    def is_leaf(self) -> bool:
        return isinstance(self, (CauseLeaf, HealthyLeaf))


@dataclass
class Check(_Node):
    """A node that decides a condition over the observations: yes, no or unknown."""

    title: str = ""
    why: str = ""
    check: str = ""
    condition: Condition | None = None
    expected: str = ""
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # yes, no, unknown
    kind = "check"


@dataclass
class Question(_Node):
    """A node that asks the operator; each choice (or unknown) leads on."""

    title: str = ""
    why: str = ""
    ask: str = ""
    answer: str = ""
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # the choices, then unknown
    kind = "question"

    @property
    def choices(self) -> list[str]:
        return [label for label in self.outcomes if label != "unknown"]


@dataclass
class CauseLeaf(_Node):
    """A leaf naming a root cause; every text it shows comes from the cause catalogue."""

    cause: str = ""
    kind = "cause"

    @property
    def info(self) -> CauseInfo:
        from .causes import CAUSES

        return CAUSES[self.cause]

    title = property(lambda self: self.info.title)
    severity = property(lambda self: self.info.severity)
    owner = property(lambda self: self.info.owner)
    summary = property(lambda self: self.info.summary)
    remediation = property(lambda self: list(self.info.remediation))
    verification = property(lambda self: list(self.info.verification))


@dataclass
class HealthyLeaf(_Node):
    """A "no fault" leaf: the catalogue's words, unless its path says more (own_*)."""

    healthy: str = ""
    own_summary: str = ""
    own_next_steps: list[str] = field(default_factory=list)
    verdict: str = "healthy"  # or "not_applicable" (status.VERDICTS): nothing of NCCL's networking to judge
    kind = "healthy"

    @property
    def info(self) -> CauseInfo:
        from .causes import CAUSES

        return CAUSES[self.healthy]

    title = property(lambda self: self.info.title)
    summary = property(lambda self: self.own_summary or self.info.summary)
    next_steps = property(lambda self: list(self.own_next_steps or self.info.next_steps))


Node = Check | Question | CauseLeaf | HealthyLeaf


@dataclass
class Rejoin:
    """A runbook-level `rejoin:`: after the runbook's own checks reach its healthy end, the walk
    runs another runbook's steps from `at` until it reaches `until` (not run), then ends at that
    healthy leaf. A detour that branches off the trunk early (the net-plugin branch) so still runs
    the trunk's fabric-independent checks (PCIe, Xid, ACS, IOMMU) without its fabric branch."""

    at: str  # "runbook.node", resolved and checked by graph.build_set
    until: str
    loc: Location  # of the `rejoin:` key


@dataclass
class Runbook:
    """One decision tree (a runbooks/*.yaml file): its nodes and the one it starts at."""

    id: str
    title: str
    entry: str
    nodes: dict[str, Node]
    file: str
    loc: Location  # of the `runbook:` value
    entry_loc: Location
    description: str = ""
    # A branch only some nodes take (the net-plugin branch, reached from "no RDMA ports"): its healthy
    # end counts for a walk that entered it, so the steps before it are not shown passed on other nodes.
    detour: bool = False
    rejoin: Rejoin | None = None

    @property
    def facts(self) -> set[str]:
        found: set[str] = set()
        for node in self.nodes.values():
            if isinstance(node, Check) and node.condition is not None:
                found |= node.condition.facts
        return found


@dataclass
class RunbookSet:
    """Every loaded runbook, linked into one graph from the root runbook."""

    runbooks: dict[str, Runbook]  # in load order
    root: str
    built_graph: nx.DiGraph | None = field(default=None, repr=False, compare=False)

    @property
    def graph(self) -> nx.DiGraph:
        """The networkx graph, built on first use: a set from the knowledge cache walks without it."""
        if self.built_graph is None:
            self.built_graph = build_graph(self.runbooks)
        return self.built_graph

    @property
    def entry(self) -> str:
        root = self.runbooks[self.root]
        return f"{root.id}.{root.entry}"

    def node(self, key: str) -> Node:
        runbook, _, node_id = key.partition(".")
        return self.runbooks[runbook].nodes[node_id]

    def nodes(self) -> list[Node]:
        return [node for rb in self.runbooks.values() for node in rb.nodes.values()]

    @property
    def facts(self) -> set[str]:
        """Every fact some condition reads: what the probes must observe."""
        found: set[str] = set()
        for rb in self.runbooks.values():
            found |= rb.facts
        return found

    @property
    def answers(self) -> dict[str, list[str]]:
        """Answer names of the questions -> their choices (for --answer NAME=CHOICE)."""
        out: dict[str, list[str]] = {}
        for node in self.nodes():
            if isinstance(node, Question):
                out.setdefault(node.answer, [])
                out[node.answer] += [c for c in node.choices if c not in out[node.answer]]
        return out


def build_graph(by_id: dict[str, Runbook]) -> nx.DiGraph:
    """Nodes "runbook.node" (attrs: kind, title, runbook, node); edges carry their labels.
    networkx is imported here, on first use: only validation and drawing need the graph."""
    import networkx as nx

    graph = nx.DiGraph()
    for rb in by_id.values():
        for node in rb.nodes.values():
            graph.add_node(node.key, kind=node.kind, title=getattr(node, "title", ""), runbook=rb.id, node=node)
    for rb in by_id.values():
        for node in rb.nodes.values():
            for label, outcome in getattr(node, "outcomes", {}).items():
                if graph.has_edge(node.key, outcome.target):
                    graph.edges[node.key, outcome.target]["labels"].append(label)
                else:
                    graph.add_edge(node.key, outcome.target, labels=[label])
    return graph
