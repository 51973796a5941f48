"""The layout's two conventions (issue 27 item 4): every command is commands/<name>.py with
add_parser and run, and no two modules of the package share a basename."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from allreduce_doctor.cli import COMMANDS

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "allreduce_doctor"


def test_every_command_is_one_module_with_add_parser_and_run():
    modules = {p.stem for p in (PACKAGE / "commands").glob("*.py")} - {"__init__"}
    assert modules == set(COMMANDS)
    for name in COMMANDS:
        tree = ast.parse((PACKAGE / "commands" / f"{name}.py").read_text(encoding="utf-8"))
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert {"add_parser", "run"} <= functions, name


def test_no_two_modules_share_a_basename():
    where = defaultdict(list)
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py" and "__pycache__" not in path.parts:
            where[path.name].append(str(path.relative_to(PACKAGE)))
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}
