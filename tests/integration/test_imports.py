"""No import cycles in src/allreduce_doctor: between modules, and between its packages.

The graph is read with `ast` from every import statement anywhere in a module (function-level
lazy imports included: they form cycles at run time all the same), except under
`if TYPE_CHECKING:`. A cycle fails the test with its modules named in order.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "allreduce_doctor"


def module_names(root: Path = PACKAGE) -> dict[str, Path]:
    names = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imported(tree: ast.AST, package: str, modules: dict[str, Path]) -> set[str]:
    """Modules of `modules` named by the import statements in `tree` (a module of `package`)."""
    found: set[str] = set()
    todo = list(ast.iter_child_nodes(tree))
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _type_checking(node):
            todo.extend(node.orelse)  # the else branch runs; the TYPE_CHECKING body never does
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:  # `from pkg import module` imports that module
                found.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source)
        else:
            todo.extend(ast.iter_child_nodes(node))
    return found & set(modules)


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    modules = module_names(root)
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph[name] = _imported(ast.parse(path.read_text(encoding="utf-8")), package, modules) - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The same graph between allreduce_doctor's subpackages (a top-level module is its own)."""
    def top(name: str) -> str:
        return ".".join(name.split(".")[:2])

    out: dict[str, set[str]] = {}
    for name, targets in graph.items():
        out.setdefault(top(name), set()).update(top(t) for t in targets if top(t) != top(name))
    return out


def test_no_cycle_between_modules():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_cycle_between_packages():
    cycle = find_cycle(package_graph(import_graph()))
    assert cycle is None, "import cycle between packages: " + " -> ".join(cycle)


def test_the_graph_sees_lazy_and_relative_imports_and_skips_type_checking(tmp_path):
    pkg = tmp_path / "allreduce_doctor"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from allreduce_doctor.sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("from . import c\n")
    (pkg / "sub" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from allreduce_doctor import d\n"
        "else:\n    import allreduce_doctor.a\n")
    (pkg / "d.py").write_text("import allreduce_doctor.a\n")
    graph = import_graph(pkg)
    assert graph["allreduce_doctor.a"] == {"allreduce_doctor.sub.b"}
    assert graph["allreduce_doctor.sub.c"] == {"allreduce_doctor.a"}  # not d: TYPE_CHECKING only
    assert find_cycle(graph) == ["allreduce_doctor.a", "allreduce_doctor.sub.b", "allreduce_doctor.sub.c",
                                 "allreduce_doctor.a"]
    assert find_cycle(package_graph(graph)) == ["allreduce_doctor.a", "allreduce_doctor.sub", "allreduce_doctor.a"]
