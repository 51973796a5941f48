"""Draw a RunbookSet: Graphviz DOT and Mermaid flowcharts.

Edges are labelled with their outcome (yes / no / unknown / a choice), leaves are styled
(causes red, healthy ends green) and show their cause id. With `runbook_id`, only that
runbook is drawn; the nodes it jumps to in other runbooks appear as dashed stubs.
"""

from __future__ import annotations

from .model import CauseLeaf, HealthyLeaf, Node, Question, RunbookSet

CAUSE_FILL, HEALTHY_FILL = "#f8d7da", "#d4edda"


def _selected(rs: RunbookSet, runbook_id: str | None) -> tuple[list[Node], list[str], list[tuple[str, str, str]]]:
    """(nodes drawn, stub keys in other runbooks, edges (from, to, label))."""
    if runbook_id is not None and runbook_id not in rs.runbooks:
        from ..errors import RunbookError

        raise RunbookError(f"no runbook '{runbook_id}' to draw (have: {', '.join(rs.runbooks)})")
    nodes = [n for n in rs.nodes() if runbook_id is None or n.runbook == runbook_id]
    keys = {n.key for n in nodes}
    edges = [(n.key, o.target, label) for n in nodes for label, o in getattr(n, "outcomes", {}).items()]
    stubs = list(dict.fromkeys(t for _, t, _ in edges if t not in keys))
    return nodes, stubs, edges


def _lines(node: Node) -> list[str]:
    if isinstance(node, CauseLeaf):
        return [f"cause: {node.cause}", node.title, f"{node.severity} / {node.owner}"]
    if isinstance(node, HealthyLeaf):
        return [f"healthy: {node.healthy}", node.title]
    prefix = "? " if isinstance(node, Question) else ""
    return [node.id, prefix + node.title]


def to_dot(rs: RunbookSet, runbook_id: str | None = None) -> str:
    nodes, stubs, edges = _selected(rs, runbook_id)
    out = ["digraph runbooks {", "  rankdir=TB;", '  node [shape=box, style=rounded, fontname="Helvetica"];',
           '  edge [fontname="Helvetica"];']
    for rb in rs.runbooks.values():
        members = [n for n in nodes if n.runbook == rb.id]
        if not members:
            continue
        out.append(f"  subgraph {_dq('cluster_' + rb.id)} {{")
        out.append(f"    label={_dq(f'{rb.id}: {rb.title}')};")
        for node in members:
            out.append(f"    {_dq(node.key)} [{_dot_attrs(node)}];")
        out.append("  }")
    for key in stubs:
        out.append(f"  {_dq(key)} [label={_dq(key)}, style=dashed];")
    out.append(f"  {_dq('start')} [shape=point];")
    if runbook_id is None or runbook_id == rs.root:
        out.append(f"  {_dq('start')} -> {_dq(rs.entry)};")
    else:
        rb = rs.runbooks[runbook_id]
        out.append(f"  {_dq('start')} -> {_dq(f'{rb.id}.{rb.entry}')};")
    for src, dst, label in edges:
        out.append(f"  {_dq(src)} -> {_dq(dst)} [label={_dq(label)}];")
    out.append("}")
    return "\n".join(out) + "\n"


def _dot_attrs(node: Node) -> str:
    attrs = [f"label={_dq(chr(10).join(_lines(node)))}"]
    if isinstance(node, CauseLeaf):
        attrs.append(f'style="filled", fillcolor="{CAUSE_FILL}"')
    elif isinstance(node, HealthyLeaf):
        attrs.append(f'style="filled", fillcolor="{HEALTHY_FILL}"')
    elif isinstance(node, Question):
        attrs.append("shape=diamond")
    return ", ".join(attrs)


def _dq(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_mermaid(rs: RunbookSet, runbook_id: str | None = None) -> str:
    nodes, stubs, edges = _selected(rs, runbook_id)
    out = ["flowchart TD"]
    for rb in rs.runbooks.values():
        members = [n for n in nodes if n.runbook == rb.id]
        if not members:
            continue
        out.append(f'  subgraph {rb.id}["{_mq(f"{rb.id}: {rb.title}")}"]')
        for node in members:
            label = "<br/>".join(_mq(line) for line in _lines(node))
            if isinstance(node, Question):
                out.append(f'    {_mid(node.key)}{{"{label}"}}')
            elif node.is_leaf:
                out.append(f'    {_mid(node.key)}(["{label}"])')
            else:
                out.append(f'    {_mid(node.key)}["{label}"]')
        out.append("  end")
    for key in stubs:
        out.append(f'  {_mid(key)}["{_mq(key)}"]:::stub')
    for src, dst, label in edges:
        out.append(f"  {_mid(src)} -->|{_mq(label)}| {_mid(dst)}")
    out.append(f"  classDef cause fill:{CAUSE_FILL},stroke:#a94442")
    out.append(f"  classDef healthy fill:{HEALTHY_FILL},stroke:#3c763d")
    out.append("  classDef stub stroke-dasharray: 5 5")
    for kind in ("cause", "healthy"):
        keys = [_mid(n.key) for n in nodes if n.kind == kind]
        if keys:
            out.append(f"  class {','.join(keys)} {kind}")
    return "\n".join(out) + "\n"


def _mid(key: str) -> str:
    return key.replace(".", "__")


def _mq(text: str) -> str:
    return text.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;").replace("\n", " ")
