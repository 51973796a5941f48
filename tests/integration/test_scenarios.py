"""Every scenario bundle under tests/fixtures diagnoses to what its expected.yaml pins: verdict, cause,
secondary causes and the deciding steps (tests/scenarios/expected.py says which steps decide;
`PYTHONPATH=src python -m tests.scenarios.expected NAME` rewrites a file)."""

from __future__ import annotations

import copy
import shutil

import pytest
import yaml

from allreduce_doctor.doctor import Doctor
from tests.scenarios import expected as tool
from tests.scenarios.expected import FIXTURES, deciding_steps, diagnose, load, mismatches

SCENARIOS = sorted(p.parent.name for p in FIXTURES.glob("*/expected.yaml"))


def test_every_bundle_has_an_expectation():
    bundles = sorted(p.parent.name for p in FIXTURES.glob("*/bundle.tar.gz"))
    assert bundles == SCENARIOS and len(bundles) >= 10


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_diagnoses_as_expected(name):
    expected = load(name)
    assert mismatches(expected, diagnose(name, expected.get("answers"))) == []


def test_a_planted_wrong_cause_or_deciding_step_fails():
    expected = load("roce-tc-prio0")
    today = diagnose("roce-tc-prio0")
    assert mismatches(expected, today) == []
    wrong = [dict(expected, cause="pfc_not_enabled"), dict(expected, verdict="healthy"), dict(expected, secondary=[]),
             dict(expected, deciding={"trunk.branch": "yes", "roce.traffic_class": "no"}),
             dict(expected, deciding={"trunk.branch": "yes", "roce.pfc": "yes", "roce.traffic_class": "yes"}),
             dict(expected, deciding={"roce.traffic_class": "yes"})]
    assert [mismatches(w, today) for w in wrong] == [
        ["cause: expected 'pfc_not_enabled', got 'traffic_class_mismatch'"],
        ["verdict: expected 'healthy', got 'fault'"],
        ["secondary: expected [], got ['ecn_disabled']"],
        ["deciding: expected {'trunk.branch': 'yes', 'roce.traffic_class': 'no'}, "
         "got {'trunk.branch': 'yes', 'roce.traffic_class': 'yes', 'roce.traffic_seen': 'yes'}"],
        ["deciding: expected {'trunk.branch': 'yes', 'roce.pfc': 'yes', 'roce.traffic_class': 'yes'}, "
         "got {'trunk.branch': 'yes', 'roce.traffic_class': 'yes', 'roce.traffic_seen': 'yes'}"],
        ["deciding: expected {'roce.traffic_class': 'yes'}, got {'trunk.branch': 'yes', 'roce.traffic_class': 'yes', 'roce.traffic_seen': 'yes'}"],
    ]
    old_form = {k: v for k, v in expected.items() if k != "deciding"} | {"path": [s["node"] for s in today["path"]]}
    assert mismatches(old_form, today) == [
        "expected.yaml pins the whole path, not the deciding steps: run python -m tests.scenarios.expected NAME"]


def test_a_step_decides_when_it_leaves_the_way_missing_evidence_takes():
    """A passing check adds nothing; a new unknown, a failed check, or a different branch does."""
    runbooks = Doctor.load().runbooks
    today = diagnose("roce-pfc-off")
    assert deciding_steps(today, runbooks) == {"trunk.branch": "yes", "roce.pfc": "yes"}
    fewer = dict(today, path=[s for s in today["path"] if s["node"] != "trunk.acs"])  # one check less
    assert deciding_steps(fewer, runbooks) == {"trunk.branch": "yes", "roce.pfc": "yes"}
    changed = copy.deepcopy(today)
    outcome = {s["node"]: s for s in changed["path"]}
    outcome["trunk.acs"]["outcome"] = "unknown"  # its evidence went missing
    outcome["trunk.evidence"]["outcome"] = "yes"  # a log was given (the walk enters nccl_log)
    outcome["trunk.branch"]["outcome"] = "no"  # InfiniBand: the way missing evidence takes
    assert deciding_steps(changed, runbooks) == {"trunk.evidence": "yes", "trunk.acs": "unknown", "roce.pfc": "yes"}


def test_the_rewrite_turns_the_old_form_into_the_committed_file_and_refuses_a_changed_cause(tmp_path, monkeypatch):
    name = "roce-tc-prio0"
    committed = (FIXTURES / name / "expected.yaml").read_text()
    shutil.copytree(FIXTURES / name, tmp_path / name)
    old = {k: v for k, v in load(name).items() if k != "deciding"}
    old["path"] = [s["node"] for s in diagnose(name)["path"]]
    (tmp_path / name / "expected.yaml").write_text(yaml.safe_dump(old, sort_keys=False))
    monkeypatch.setattr(tool, "FIXTURES", tmp_path)
    assert tool.rewrite(name) == f"{name}: written (3 deciding steps)"
    assert (tmp_path / name / "expected.yaml").read_text() == committed
    assert tool.rewrite(name) == f"{name}: unchanged"
    (tmp_path / name / "expected.yaml").write_text(committed.replace("cause: traffic_class_mismatch", "cause: pfc_not_enabled"))
    assert tool.rewrite(name) == (f"{name}: NOT written, today's diagnosis differs (cause: expected 'pfc_not_enabled', "
                                  "got 'traffic_class_mismatch'): fix the product or edit the file by hand")
    assert "pfc_not_enabled" in (tmp_path / name / "expected.yaml").read_text()
