"""Issue 30 item 7: the attributes a check reads come first in every rendering of its deciding value,
and are never cut (before, keys were put in a fixed order and the line cut at 160 characters, so the
GitHub ticket of roce-pfc-off lost `pfc_on_any=false`, the key `roce.pfc` decides on)."""

from __future__ import annotations

import pytest

from allreduce_doctor.export import markdown  # noqa: F401  (the exporters render through ticket.short)
from allreduce_doctor.oneline import short
from allreduce_doctor.runbook.cond_ast import walk_var_attrs
from allreduce_doctor.runbook.cond_parser import parse
from tests.export.goldens import GOLDEN

RECORD = {"name": "enp155s0np0", "priority": 3, "tc": 106, "dscp": 26, "trust": "dscp", "pfc_on_priority": False,
          "ecn_on_priority": True, "buffer_known": False, "buffer_why": "", "cnp_known": False,
          "declared_lossy": False, "declared_priority": None, "pfc_on_any": False, "tc_from": "NCCL_IB_TC"}


def test_the_checks_attributes_in_written_order():
    expr = parse("any(r in roce.priority: r.pfc_on_any == false and not r.declared_lossy)", ["roce.priority"])
    assert walk_var_attrs(expr) == ["pfc_on_any", "declared_lossy"]


def test_deciding_keys_first():
    assert short([RECORD], decides=["pfc_on_any", "declared_lossy"]).startswith(
        "enp155s0np0: pfc_on_any=false declared_lossy=false priority=3 tc=106")


def test_deciding_keys_are_never_cut():
    """Even when the line is too short for them, they stay whole and only the rest goes."""
    assert short([RECORD, dict(RECORD, name="enp156s0np0")], limit=40, decides=["pfc_on_any", "declared_lossy"]) == (
        "enp155s0np0: pfc_on_any=false declared_lossy=false; enp156s0np0: pfc_on_any=false declared_lossy=false ...")


def test_a_null_deciding_key_is_shown():
    assert short([{"name": "p", "pfc_on_any": None}], decides=["pfc_on_any"]) == "p: pfc_on_any=null"


def test_without_decides_the_rendering_is_unchanged():
    assert "pfc_on_any" not in short([RECORD])


@pytest.mark.parametrize("document", ["github.md", "ticket.md", "jira.txt"])
def test_the_roce_pfc_off_ticket_shows_pfc_on_any(document):
    text = (GOLDEN / "roce-pfc-off" / document).read_text()
    line = next(x for x in text.splitlines() if "Deciding value:" in x)
    assert "Deciding value: enp155s0np0: pfc_on_any=false declared_lossy=false priority=3" in line
