"""docs/validate.md names every option of `validate`, and the README's command table lists it."""

from __future__ import annotations

import argparse
import re

from allreduce_doctor.cli import build_parser
from tests.tui.helpers import ROOT


def test_every_validate_option_is_in_its_doc():
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    options = [o for a in subparsers.choices["validate"]._actions for o in a.option_strings
               if o.startswith("--") and o != "--help"]
    text = (ROOT / "docs" / "validate.md").read_text(encoding="utf-8")
    assert "--tui" in options and [o for o in options if not re.search(rf"(?<![\w-]){o}(?![\w-])", text)] == []


def test_the_readme_lists_validate_with_its_doc():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| `allreduce-doctor validate "))
    assert "[--tui]" in row and "(docs/validate.md)" in row
