"""docs/tui.md stays true: every key the app binds is in its table, the screenshot is there; and
the watch command's module stays light (`--help` must not import Textual)."""

from __future__ import annotations

import subprocess
import sys

from allreduce_doctor.tui.dialogs.help_dialog import key_sections
from tests.tui.helpers import ROOT

DOC = ROOT / "docs" / "tui.md"


def test_every_key_is_in_the_docs():
    text = DOC.read_text(encoding="utf-8")
    for title, rows in key_sections():
        assert f"| **{title}** | |" in text, title
        for keys, what in rows:
            assert f"| `{keys}` | {what} |" in text, (keys, what)


def test_docs_show_the_diagnosis_screenshot():
    assert "![The diagnosis screen on the roce-pfc-off example bundle](tui-diagnosis.svg)" in DOC.read_text(encoding="utf-8")
    assert (ROOT / "docs" / "tui-diagnosis.svg").read_text(encoding="utf-8").startswith("<svg")


def test_watch_command_module_imports_no_textual():
    code = ("import sys, allreduce_doctor.commands.watch, allreduce_doctor.cli as c; c.build_parser(); "
            "print(sorted(m for m in sys.modules if m.startswith(('textual', 'networkx', 'yaml'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}, check=True).stdout
    assert out == "[]\n"
