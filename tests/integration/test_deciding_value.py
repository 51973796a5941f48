"""The deciding facts are printed, and no text points at a deciding value that is not shown (issue 30,
item 6): the text report prints the root cause's deciding value whole, every key a cause's text cites
("recommended_index in the deciding value") among it; a report with none shows no "see the deciding value"."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.export import render_export
from allreduce_doctor.oneline import unreferenced
from allreduce_doctor.runbook.causes import CAUSES
from allreduce_doctor.tui.widgets.detail import cause_markup

TESTS = Path(__file__).resolve().parents[1]
BUNDLES = sorted((TESTS / "fixtures" / "scenarios").glob("*/bundle.tar.gz"))
CITED = re.compile(r"([\w.]+) in the deciding value")


def _run(*args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["diagnose", *args])
    return out.getvalue()


def _block(text: str) -> list[str]:
    """The lines of the text report's `Deciding value (...)` block."""
    lines = text.splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith("Deciding value (")), None)
    if at is None:
        return []
    end = lines.index("", at)
    return lines[at + 1:end]


def test_the_gid_fault_prints_its_deciding_value_whole():
    text = _run("--snapshot", str(TESTS / "fixtures" / "scenarios" / "roce-gid-link-local" / "bundle.tar.gz"))
    lines = text.splitlines()
    assert lines[lines.index("Deciding value (NCCL's GID index points at a routable RoCE v2 entry):") + 1] == (
        '  mlx5_0/1: routable=false pinned="1" index=1 gid="fe80:0000:0000:0000:0e42:a1ff:fe5d:4d00" kind="link_local" '
        'type="RoCE v2" ndev="enp26s0np0" recommended_index=3 mode="pinned" version=2 port_netdev="enp26s0np0"')
    assert "recommended_index in the deciding value" in text  # the Fix cites it: it is shown above


@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.parent.name for b in BUNDLES])
def test_every_text_that_points_at_the_deciding_value_has_it_shown(bundle):
    text = _run("--snapshot", str(bundle))
    block = _block(text)
    pointers = [line for line in text.splitlines() if "deciding value" in line and not line.startswith("Deciding value (")]
    if pointers:
        assert block, pointers[0]
    for key in CITED.findall(text):
        assert any(f" {key}=" in line or line.startswith(f"  {key}:") for line in block), key


def test_a_paste_with_no_deciding_value_points_at_none(tmp_path):
    # nccl-426's completion error 12 and a leftover NCCL_P2P_DISABLE=1: the GID candidate heads, undecided
    paste = tmp_path / "paste.txt"
    paste.write_text((TESTS / "evidence" / "cases" / "nccl-426.txt").read_text() + "NCCL_P2P_DISABLE=1\n")
    text = _run("--evidence", str(paste))
    assert text.splitlines()[2] == "INCONCLUSIVE: wrong_gid_index (critical, owner: platform)"
    assert "deciding value" not in text.lower()
    assert "  1. [platform] Set NCCL_IB_GID_INDEX to the RoCE v2 entry of the routed IPv4 address on every node " \
           "(show_gids; commonly 3)." in text.splitlines()
    d = json.loads(_run("--evidence", str(paste), "--format", "json"))
    for fmt in ("markdown", "github", "jira"):
        doc = render_export(d, fmt)
        assert not re.search(r"(?:see|in) the deciding value", doc), fmt
    assert "deciding value" not in cause_markup(d)


@pytest.mark.parametrize("cause", sorted(CAUSES))
def test_every_pointer_of_the_catalogue_comes_out_cleanly(cause):
    info = CAUSES[cause]
    for text in (info.summary, *info.remediation, *info.verification):
        plain = unreferenced(text)
        assert "deciding value" not in plain.lower()
        assert not re.search(r"\(\s|\s\)|\(\)|\s[,;.]|,\)", plain) or re.search(r"\(\s|\s\)|\(\)|\s[,;.]|,\)", text), plain
