"""Graph checks over a RunbookSet, and the DOT / Mermaid drawings."""

from __future__ import annotations

import networkx as nx
import pytest

from allreduce_doctor.errors import RunbookError
from allreduce_doctor.runbook import build_set, load_runbooks, parse_runbook, to_dot, to_mermaid
from tests.runbook.helpers import FACTS

A = """\
runbook: a
title: A
entry: one
nodes:
  one:
    title: One
    why: Because.
    check: len(rdma.ports) > 0
    yes: {next: two, means: m}
    no: {next: b, means: m}
    unknown: {next: done, means: m}
  two:
    title: Two
    why: Because.
    check: exists(nccl.env)
    yes: {next: done, means: m}
    no: {next: b.three, means: m}
    unknown: {next: done, means: m}
  done:
    healthy: no_fault_found
    summary: Fine.
    next_steps: [load test]
"""
B = """\
runbook: b
title: B
entry: three
nodes:
  three:
    title: Three
    why: Because.
    check: exists(gpu.gdr)
    yes: {next: a.done, means: m}
    no: {next: a.done, means: m}
    unknown: {next: a.done, means: m}
"""


def build(*texts, root="a"):
    return build_set([parse_runbook(t, f"{t.split()[1]}.yaml", FACTS) for t in texts], root)


def error_of(*texts, root="a") -> str:
    with pytest.raises(RunbookError) as info:
        build(*texts, root=root)
    return str(info.value)


def test_graph_nodes_and_labelled_edges():
    rs = build(A, B)
    assert isinstance(rs.graph, nx.DiGraph)
    assert set(rs.graph.nodes) == {"a.one", "a.two", "a.done", "b.three"}
    assert rs.graph.edges["a.one", "b.three"]["labels"] == ["no"]
    assert rs.graph.edges["b.three", "a.done"]["labels"] == ["yes", "no", "unknown"]
    assert rs.graph.nodes["a.done"]["kind"] == "healthy"


def test_cycle_across_runbooks_is_named():
    cyclic = B.replace("yes: {next: a.done, means: m}", "yes: {next: a, means: m}")
    assert error_of(A, cyclic) == (
        "b.yaml:9:17: cycle in the runbook graph: a.one -> a.two -> b.three -> a.one (at nodes.three.yes.next)"
    )


def test_self_loop_is_a_cycle():
    looping = A.replace("unknown: {next: done, means: m}\n  two:", "unknown: {next: one, means: m}\n  two:")
    assert error_of(looping, B) == "a.yaml:11:21: cycle in the runbook graph: a.one -> a.one (at nodes.one.unknown.next)"


def test_unreachable_node_is_reported_with_its_location():
    orphan = A + "  orphan:\n    healthy: no_fault_found\n    summary: x\n    next_steps: [y]\n"
    assert error_of(orphan, B) == "a.yaml:23:3: node 'a.orphan' is not reachable from the root entry 'a.one' (at nodes.orphan)"


def test_runbook_never_entered_is_unreachable():
    unlinked = A.replace("{next: b, means: m}", "{next: done, means: m}").replace("{next: b.three, means: m}", "{next: done, means: m}")
    assert error_of(unlinked, B) == "b.yaml:5:3: node 'b.three' is not reachable from the root entry 'a.one' (at nodes.three)"


def test_root_cannot_be_guessed_between_two_independent_runbooks():
    other = A.replace("runbook: a", "runbook: c").replace("next: b, means", "next: done, means").replace(
        "next: b.three", "next: done"
    )
    plain = A.replace("next: b, means", "next: done, means").replace("next: b.three", "next: done")
    assert error_of(plain, other, root=None) == "cannot tell the root runbook among a, c: name it (root=...)"


def test_facts_and_answers_of_the_example_set(example_set):
    assert example_set.facts == {
        "rdma.ports", "nccl.env", "gpu.gdr", "rdma.gids", "roce.nccl_ports", "net.qos", "net.ecn",
        "counters.roce", "counters.ib",
    }
    assert example_set.answers == {"validated_scale": ["two_nodes", "full_job"]}
    assert list(example_set.runbooks) == ["ib", "roce", "trunk"]  # load order
    assert example_set.root == "trunk" and example_set.entry == "trunk.rdma_present"


def test_example_set_is_a_dag_reachable_from_the_root(example_set):
    graph = example_set.graph
    assert nx.is_directed_acyclic_graph(graph)
    assert nx.descendants(graph, example_set.entry) | {example_set.entry} == set(graph.nodes)
    leaves = {n for n in graph.nodes if graph.out_degree(n) == 0}
    assert all(graph.nodes[n]["kind"] in ("cause", "healthy") for n in leaves)


def test_to_dot(example_set):
    dot = to_dot(example_set)
    assert dot.startswith("digraph runbooks {") and dot.rstrip().endswith("}")
    assert '"start" -> "trunk.rdma_present";' in dot
    assert '"trunk.rdma_present" -> "trunk.ib_disabled" [label="yes"];' in dot
    assert '"trunk.fabric" -> "roce.gid_index" [label="yes"];' in dot
    assert '"trunk.fabric" -> "ib.port_active" [label="no"];' in dot
    assert '"roce.loss" -> "ib.scale" [label="unknown"];' in dot
    assert '"ib.scale" -> "ib.hw_limit" [label="full_job"];' in dot
    assert (
        '"roce.wrong_gid" [label="cause: wrong_gid_index\\nNCCL uses a GID that does not route '
        '(link-local, RoCE v1 or absent)\\ncritical / platform", style="filled", fillcolor="#f8d7da"];'
    ) in dot
    assert '"ib.healthy_end" [label="healthy: no_fault_found\\n' in dot
    assert '"ib.scale" [label="scale\\n? At what scale was the fabric validated?", shape=diamond];' in dot
    assert 'subgraph "cluster_roce" {' in dot


def test_to_dot_of_one_runbook_draws_stubs(example_set):
    dot = to_dot(example_set, "roce")
    assert '"ib.scale" [label="ib.scale", style=dashed];' in dot
    assert '"start" -> "roce.gid_index";' in dot
    assert "trunk.rdma_present" not in dot
    with pytest.raises(RunbookError, match="no runbook 'rocee' to draw"):
        to_dot(example_set, "rocee")


def test_to_mermaid(example_set):
    mermaid = to_mermaid(example_set)
    assert mermaid.startswith("flowchart TD\n")
    assert "  trunk__rdma_present -->|yes| trunk__ib_disabled" in mermaid
    assert "  trunk__rdma_present -->|no| trunk__sockets" in mermaid
    assert "  trunk__fabric -->|unknown| ib__port_active" in mermaid
    assert "  ib__scale -->|two_nodes| ib__healthy_end" in mermaid
    assert '    roce__pfc_off(["cause: pfc_not_enabled<br/>' in mermaid
    assert '    ib__scale{"scale<br/>? At what scale was the fabric validated?"}' in mermaid
    assert "  class ib__port_down,ib__degraded,ib__link_errors_leaf,roce__wrong_gid," in mermaid
    assert "  class ib__hw_limit,ib__healthy_end healthy" in mermaid
    assert "#quot;" not in to_mermaid(example_set, "ib")
    assert 'trunk__gdr["gdr<br/>GPUDirect RDMA is enabled"]' in mermaid


def test_mermaid_escapes_quotes_and_angle_brackets(tmp_path):
    text = A.replace("title: One", "title: 'Say \"hi\" <b>'")
    path = tmp_path / "a.yaml"
    path.write_text(text.replace("next: b, means", "next: done, means").replace("next: b.three", "next: done"))
    rs = load_runbooks([path], FACTS)
    assert 'a__one["one<br/>Say #quot;hi#quot; #lt;b#gt;"]' in to_mermaid(rs)
    assert '"a.one" [label="one\\nSay \\"hi\\" <b>"];' in to_dot(rs)
