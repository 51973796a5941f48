"""docs/schema/diagnosis.schema.json (JSON Schema 2020-12) describes `--format json`: the schema is
valid, every kind of output validates (bundles of every verdict, pasted evidence, healthcheck with
its metrics, not_applicable, a validate record's replay), its enums are the code's own words, and a
broken document fails."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.observations import ERROR, MISSING, NOT_APPLICABLE, OK
from allreduce_doctor.runbook.causes import SEVERITIES
from allreduce_doctor.status import STEP_FAIL, STEP_NA, STEP_PASS, STEP_UNKNOWN, VERDICTS

ROOT = Path(__file__).parents[2]
SCHEMA = json.loads((ROOT / "docs" / "schema" / "diagnosis.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
SCENARIOS = sorted((ROOT / "tests" / "fixtures" / "scenarios").glob("*/bundle.tar.gz"))
CASES = sorted((ROOT / "tests" / "evidence" / "cases").glob("*.txt"))


def as_json(capsys, *argv) -> dict:
    main(list(argv))
    return json.loads(capsys.readouterr().out)


def errors(data: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(data)]


def test_the_schema_is_valid_2020_12():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_its_enums_are_the_codes_words():
    defs, props = SCHEMA["$defs"], SCHEMA["properties"]
    assert props["verdict"]["enum"] == list(VERDICTS)
    assert defs["severity"]["enum"] == list(SEVERITIES)
    assert set(defs["status"]["enum"]) == {OK, MISSING, ERROR, NOT_APPLICABLE}
    assert set(defs["step"]["properties"]["badge"]["enum"]) == {"", STEP_PASS, STEP_FAIL, STEP_UNKNOWN, STEP_NA}


@pytest.mark.parametrize("bundle", SCENARIOS[::8] + [ROOT / "examples" / "roce-pfc-off.tar.gz"], ids=lambda p: p.parent.name)
def test_a_bundles_diagnosis_validates(capsys, bundle):
    assert errors(as_json(capsys, "diagnose", "--snapshot", str(bundle), "--format", "json")) == []


@pytest.mark.parametrize("case", CASES[::10], ids=lambda p: p.stem)
def test_a_pasted_logs_diagnosis_validates(capsys, case):
    assert errors(as_json(capsys, "diagnose", "--evidence", str(case), "--format", "json")) == []


def test_healthcheck_with_its_metrics_validates(capsys):
    data = as_json(capsys, "healthcheck", "--snapshot", str(ROOT / "examples" / "ib-healthy.tar.gz"), "--format", "json")
    assert errors(data) == [] and data["verdict"] == "healthy"


def test_not_applicable_validates(capsys, tmp_path):
    from tests.scenarios import nodes as N
    from tests.scenarios.build import record

    path = tmp_path / "no-gpus-no-rdma.tar.gz"
    record(N.Node(ports=0, gpus=0), path)
    data = as_json(capsys, "diagnose", "--interval", "0", "--snapshot", str(path), "--format", "json")
    assert (data["verdict"], errors(data)) == ("not_applicable", [])


@pytest.mark.slow
def test_a_validate_replay_validates(tmp_path, monkeypatch, capsys):
    from tests.validate.harness import run_scenario

    data, root = run_scenario("lossy", tmp_path, monkeypatch)
    assert errors(data) == [] and errors(as_json(capsys, "diagnose", "--snapshot", str(root), "--format", "json")) == []


def test_a_broken_document_fails(capsys):
    good = as_json(capsys, "diagnose", "--snapshot", str(ROOT / "examples" / "roce-pfc-off.tar.gz"), "--format", "json")
    for change, message in [
        (lambda d: d.update(verdict="ok"), "verdict: 'ok' is not one of ['fault', 'healthy', 'inconclusive', 'not_applicable']"),
        (lambda d: d.pop("path"), ": 'path' is a required property"),
        (lambda d: d["findings"][0].update(severity="urgent"), "findings/0/severity: 'urgent' is not one of ['critical', 'major', 'minor']"),
        (lambda d: d["path"][0].update(kind="probe"), "path/0/kind: 'probe' is not one of ['check', 'question']"),
        (lambda d: d["evidence"][0].update(status="fine"), "evidence/0/status: 'fine' is not one of ['ok', 'missing', 'error', 'not_applicable']"),
    ] + ([(lambda d: d["context"].update(diagnosed_at="yesterday"), "context/diagnosed_at: 'yesterday' is not a 'date-time'")]
         if "date-time" in VALIDATOR.format_checker.checkers else []):  # jsonschema checks it with rfc3339-validator
        data = copy.deepcopy(good)
        change(data)
        assert message in errors(data), (message, errors(data))
