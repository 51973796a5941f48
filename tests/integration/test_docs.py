"""The docs stay true: the README's annotated runbook loads, and every command is documented."""

from __future__ import annotations

import re
from pathlib import Path

from allreduce_doctor.cli import COMMANDS, build_parser
from allreduce_doctor.doctor import load_catalogue
from allreduce_doctor.runbook import load_runbook_text

ROOT = Path(__file__).resolve().parents[2]


def test_annotated_runbook_example_loads():
    text = (ROOT / "runbooks" / "README.md").read_text()
    example = re.search(r"```yaml\n(runbook: example.*?)```", text, re.S).group(1)
    rs = load_runbook_text(example, "README.md", load_catalogue().facts())
    nodes = rs.runbooks["example"].nodes
    assert set(nodes) == {"pfc", "scale", "mismatch", "healthy"}
    assert nodes["mismatch"].cause == "traffic_class_mismatch"


def test_every_command_is_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) <= set(COMMANDS)
    for command in sub.choices:
        assert f"allreduce-doctor {command}" in readme, command


def test_every_probe_file_is_in_the_probes_readme():
    readme = (ROOT / "probes" / "README.md").read_text()
    for path in (ROOT / "probes").glob("*.yaml"):
        assert f"`{path.name}`" in readme, path.name
