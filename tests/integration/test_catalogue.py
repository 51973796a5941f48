"""Conformance: every cause of the catalogue is a runbook leaf and has a scenario that names it."""

from __future__ import annotations

from pathlib import Path

import yaml

from allreduce_doctor.runbook.causes import CAUSES
from allreduce_doctor.runbook.model import CauseLeaf, HealthyLeaf
from allreduce_doctor.doctor import Doctor

ROOT = Path(__file__).resolve().parents[2]
# Scenario folders: node bundles (tests/fixtures/scenarios) and evidence cases (tests/evidence).
EXPECTATIONS = [*ROOT.glob("tests/fixtures/scenarios/*/expected.yaml"), *ROOT.glob("tests/**/scenario*.yaml")]


def _leaves():
    runbooks = Doctor.load().runbooks
    return [n for n in runbooks.nodes() if isinstance(n, (CauseLeaf, HealthyLeaf))]


# Causes only a comparison of many nodes can name: the fleet command finds them
# (src/allreduce_doctor/fleet/), not a single node's runbook walk.
FLEET_ONLY = {"setting_mismatch", "straggler_node"}


def test_every_cause_is_a_runbook_leaf():
    named = {getattr(leaf, "cause", None) or getattr(leaf, "healthy", None) for leaf in _leaves()}
    assert sorted(set(CAUSES) - named - FLEET_ONLY) == []


def test_fleet_only_causes_are_named_by_the_fleet_comparison():
    source = "\n".join(p.read_text() for p in (ROOT / "src" / "allreduce_doctor" / "fleet").glob("*.py"))
    for cause in FLEET_ONLY:
        assert f'"{cause}"' in source


def test_every_cause_leaf_carries_fix_and_proof():
    for leaf in _leaves():
        if isinstance(leaf, CauseLeaf):
            assert leaf.remediation and leaf.verification and leaf.owner in ("host", "network", "platform")
            assert leaf.severity in ("critical", "major", "minor") and leaf.summary.strip()
        else:
            assert leaf.next_steps and leaf.summary.strip()


def test_every_cause_has_a_scenario():
    covered = set()
    for path in EXPECTATIONS:
        data = yaml.safe_load(path.read_text()) or {}
        for item in data if isinstance(data, list) else [data]:
            if isinstance(item, dict) and item.get("cause"):
                covered.add(item["cause"])
    assert sorted(set(CAUSES) - covered) == []
