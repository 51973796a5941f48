"""The 12 real reports of ../shared/cases diagnose to the cause their threads established,
through the real CLI path (diagnose --evidence FILE --format json)."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.evidence.helpers import CASES, cli

CASE_LIST = yaml.safe_load((CASES / "cases.yaml").read_text())["cases"]


@pytest.mark.parametrize("case", CASE_LIST, ids=[c["id"] for c in CASE_LIST])
def test_case_diagnoses_to_its_cause(case):
    path = CASES / f"{case['id']}.txt"
    proc = cli("diagnose", "--evidence", str(path), "--format", "json")
    assert proc.returncode in (0, 1, 3), proc.stderr.decode()
    data = json.loads(proc.stdout)
    found = (data["root_cause"] or {}).get("id") or (data["healthy"] or {}).get("id")
    assert found == case["cause"], [p["node"] for p in data["path"]]
    if case["cause"] == "expected_hardware_limit":  # the one "no fault" case: a healthy end
        assert data["verdict"] == "healthy" and data["root_cause"] is None and proc.returncode == 0
    else:
        assert data["verdict"] == "fault" and proc.returncode == 1
    assert data["evidence_used"]["files"][0]["file"] == str(path)


def test_cases_are_all_present():
    assert sorted(p.stem for p in CASES.glob("case-*.txt")) == sorted(c["id"] for c in CASE_LIST)
