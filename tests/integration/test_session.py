"""The library API every front end uses: Doctor (loaded once), Session(doctor, host, Options),
re-answering a question, and the Diagnosis fields the Session fills (bundle, evidence_used)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.doctor import Doctor, files_hash
from allreduce_doctor.errors import DoctorError
from allreduce_doctor.fleet.analyze import analyze
from allreduce_doctor.hosts.snapshot import SnapshotHost
from allreduce_doctor.resources import runbook_files
from allreduce_doctor.runbook.causes import catalogue_path
from allreduce_doctor.runbook.diagnosis import Diagnosis
from allreduce_doctor.session import Options, Session, parse_answers
from tests.fleet.conftest import bundle, lay_out

ROOT = Path(__file__).resolve().parents[2]


class NoMoreProbing:
    """A host that refuses every question: what a re-walk may not ask."""

    def __init__(self, host) -> None:
        self._host = host
        self.kind, self.manifest = host.kind, host.manifest

    def identity(self):
        return self._host.identity()

    def __getattr__(self, name):
        raise AssertionError(f"the host was asked again: {name}")


def session(scenario: str, **options) -> Session:
    return Session(Doctor.load(), SnapshotHost(bundle(scenario)), Options(interval=0, **options))


def test_the_doctor_is_loaded_once_and_names_its_runbooks():
    doctor = Doctor.load()
    assert Doctor.load() is doctor
    assert re.fullmatch(r"[0-9a-f]{16}", doctor.runbook_hash)
    assert doctor.runbook_hash == files_hash([*runbook_files(), catalogue_path()])  # the cause texts count too
    assert {"trunk", "ib", "roce"} <= set(doctor.runbooks.runbooks)


def test_a_users_runbook_file_is_a_doctor_of_its_own(tmp_path):
    mine = tmp_path / "mine.yaml"
    mine.write_bytes((runbook_files()[0]).read_bytes())
    own = Doctor.from_runbook_files([mine])
    assert own.catalogue is Doctor.load().catalogue
    assert own.runbook_hash == files_hash([mine]) != Doctor.load().runbook_hash


def test_one_catalogue_per_process_whichever_loads_first(tmp_path):
    """A probe command loads the catalogue on its own before the Doctor (from the knowledge cache):
    the process still holds one, and a user's runbooks check against the Doctor's own. Found as an
    order-dependent failure of the test above under pytest-xdist."""
    code = ("from allreduce_doctor.doctor import Doctor, load_catalogue\n"
            "from allreduce_doctor.resources import runbook_files\n"
            "first = load_catalogue()\n"
            "print(Doctor.load().catalogue is first, Doctor.from_runbook_files(runbook_files()[:1]).catalogue is first)")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "XDG_CACHE_HOME": str(tmp_path)}
    for _ in range(2):  # the first run writes the knowledge cache, the second reads it
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        assert out.stdout == "True True\n", out.stderr


def test_reanswer_walks_again_without_probing_the_node():
    s = session("ib-healthy")
    first = s.diagnose()
    assert first.unanswered[0]["node"] == "ib.scale"
    s.host = NoMoreProbing(s.host)
    answered = s.reanswer({"validated_scale": "two_nodes"})
    assert (answered.verdict, answered.healthy["node"], answered.unanswered) == ("healthy", "ib.validate_at_scale", [])
    assert s.options.answers == {"validated_scale": "two_nodes"}
    assert s.observations.get("operator.answers").value == {"validated_scale": "two_nodes"}
    skipped = s.reanswer({})
    assert (skipped.healthy["node"], skipped.unanswered[0]["node"]) == ("ib.healthy", "ib.scale")


def test_reanswer_before_any_walk_observes_first():
    s = session("ib-healthy")
    assert s.reanswer({"validated_scale": "two_nodes"}).healthy["node"] == "ib.validate_at_scale"


def test_the_bundle_and_the_evidence_used_are_diagnosis_fields():
    report = {"files": [{"file": "paste.txt"}], "facts": {}}
    diagnosis = session("roce-pfc-off", bundle="b.tar.gz", evidence_report=report).diagnose()
    assert (diagnosis.bundle, diagnosis.evidence_used) == ("b.tar.gz", report)
    data = diagnosis.to_dict()
    assert data["context"]["bundle"] == "b.tar.gz" and data["evidence_used"] == report
    assert "bundle" not in data and Diagnosis.from_dict(data) == diagnosis
    plain = session("roce-pfc-off").diagnose().to_dict()
    assert "bundle" not in plain["context"] and "evidence_used" not in plain


def test_the_cli_builds_the_same_session(capsys):
    path = str(bundle("roce-pfc-off"))
    assert main(["diagnose", "--snapshot", path, "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["context"]["bundle"] == path
    assert data["context"]["runbook_hash"] == Doctor.load().runbook_hash


def test_options_refuse_bad_input():
    with pytest.raises(DoctorError, match=r"^--interval 601: expected 0 to 600 seconds$"):
        Options(interval=601)
    with pytest.raises(DoctorError, match=r"^--answer 'scale': expected NAME=VALUE, e.g. --answer validated_scale=two_nodes$"):
        parse_answers(["scale"])
    assert parse_answers([" a = b ", "c="]) == {"a": "b", "c": ""}


def test_the_fleet_names_the_runbooks_it_used(tmp_path, capsys):
    folder = lay_out(tmp_path / "f", {"gpu01": "roce-pfc-off", "gpu02": "roce-healthy"})
    _, digests = analyze({"gpu01": folder / "gpu01.tar.gz", "gpu02": folder / "gpu02.tar.gz"}, jobs=1)
    assert digests == {"probe_catalogue": Doctor.load().catalogue.digest, "runbook_hash": Doctor.load().runbook_hash}
    assert main(["fleet", "--snapshots", str(folder), "--format", "json"]) == 1
    context = json.loads(capsys.readouterr().out)["context"]
    assert context["runbook_hash"] == Doctor.load().runbook_hash and re.fullmatch(r"[0-9a-f]{16}", context["runbook_hash"])
