"""Every scenario bundle under tests/fixtures diagnoses to the cause and path in its expected.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from allreduce_doctor.hosts.snapshot import SnapshotHost
from allreduce_doctor.doctor import Doctor
from allreduce_doctor.session import Options, Session

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"
SCENARIOS = sorted(p.parent.name for p in FIXTURES.glob("*/expected.yaml"))


def diagnose(name: str, **kwargs) -> dict:
    host = SnapshotHost(FIXTURES / name / "bundle.tar.gz")
    return Session(Doctor.load(), host, Options(interval=0, **kwargs)).diagnose().to_dict()


def test_every_bundle_has_an_expectation():
    bundles = sorted(p.parent.name for p in FIXTURES.glob("*/bundle.tar.gz"))
    assert bundles == SCENARIOS and len(bundles) >= 10


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_diagnoses_as_expected(name):
    expected = yaml.safe_load((FIXTURES / name / "expected.yaml").read_text())
    result = diagnose(name, answers=expected.get("answers") or {})
    assert result["verdict"] == expected["verdict"]
    cause = (result["root_cause"] or result["healthy"] or {}).get("id")
    assert cause == expected["cause"]
    assert [step["node"] for step in result["path"]] == expected["path"]
    secondary = sorted(f["cause"] for f in result["findings"] if f["cause"] != cause)
    assert secondary == sorted(expected.get("secondary", []))
