"""Conformance: every cause of the catalogue is a runbook leaf, has a scenario that names it, and has its texts once."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from allreduce_doctor.cli import main
from allreduce_doctor.doctor import Doctor
from allreduce_doctor.errors import RunbookError
from allreduce_doctor.hosts.snapshot import SnapshotHost
from allreduce_doctor.resources import runbook_files
from allreduce_doctor.runbook.causes import CAUSES
from allreduce_doctor.runbook.model import CauseLeaf, HealthyLeaf
from allreduce_doctor.session import Options, Session
from tests.fleet.conftest import GID5, lay_out

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


# A fleet for each: one node with a minority setting (PFC off; another GID index), one slow node.
FLEETS = {
    "setting_mismatch": ({"gpu01": "roce-pfc-off", "gpu02": GID5, "gpu03": "roce-healthy", "gpu04": "roce-healthy"},
                         ["gpu01", "gpu02"]),
    "straggler_node": ({"gpu01": "roce-healthy", "gpu02": "roce-healthy", "gpu03": "roce-congestion", "gpu04": "roce-healthy"},
                       ["gpu03"]),
}


@pytest.mark.parametrize("cause", sorted(FLEET_ONLY))
def test_fleet_only_causes_are_named_by_the_fleet_comparison(cause, tmp_path, capsys):
    """`fleet --snapshots` over bundles with the planted difference emits the cause, naming the odd nodes."""
    assert set(FLEETS) == FLEET_ONLY
    nodes, odd = FLEETS[cause]
    folder = lay_out(tmp_path / "fleet", nodes)
    code = main(["fleet", "--snapshots", str(folder), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert (code, data["verdict"], data["root_cause"]["id"]) == (1, "fault", cause)
    assert [f["cause"] for f in data["findings"]].count(cause) == 1
    assert data["fleet"]["nodes_affected"] == odd


def test_no_cause_text_is_defined_twice():
    """A text lives in the catalogue once; a healthy leaf's own words repeat neither it nor another leaf."""
    summaries = Counter(info.summary for info in CAUSES.values())
    assert [text for text, n in summaries.items() if n > 1] == []
    catalogue = {t for info in CAUSES.values() for t in (info.summary, *info.remediation, *info.verification, *info.next_steps)}
    own = Counter(t for leaf in _leaves() if isinstance(leaf, HealthyLeaf) for t in (leaf.own_summary, *leaf.own_next_steps) if t)
    assert [text for text, n in own.items() if n > 1 or text in catalogue] == []


def test_a_leaf_that_carries_a_cause_text_is_refused(tmp_path):
    trunk = (ROOT / "runbooks" / "trunk.yaml").read_text()
    leaf = "    cause: ib_disabled_by_env\n"
    assert leaf in trunk
    (tmp_path / "trunk.yaml").write_text(trunk.replace(leaf, leaf + "    remediation: [unset it]\n", 1))
    others = [p for p in runbook_files() if p.name != "trunk.yaml"]
    with pytest.raises(RunbookError) as info:
        Doctor.from_runbook_files([tmp_path / "trunk.yaml", *others])
    line = trunk[: trunk.index(leaf)].count("\n") + 2
    assert str(info.value) == (f"{tmp_path / 'trunk.yaml'}:{line}:5: cause texts live in the catalogue "
                               "(runbooks/catalogue/causes.yaml); remove 'remediation' here (at nodes.ib_disabled.remediation)")


def test_diagnosis_json_carries_the_catalogue_texts_of_every_finding():
    """Root cause and secondary findings keep severity, owner, summary, remediation and verification."""
    host = SnapshotHost(ROOT / "tests/fixtures/scenarios/multi-ib-disabled-ecn-off/bundle.tar.gz")
    d = json.loads(json.dumps(Session(Doctor.load(), host, Options(interval=0)).diagnose().to_dict()))
    root = CAUSES["ib_disabled_by_env"]
    assert {k: d["root_cause"][k] for k in ("id", "title", "severity", "owner", "summary")} == {
        "id": root.id, "title": root.title, "severity": root.severity, "owner": root.owner, "summary": root.summary}
    found = [CAUSES[f["cause"]] for f in d["findings"]]
    assert [f.id for f in found] == ["ib_disabled_by_env", "ecn_disabled"]
    assert [(f["severity"], f["owner"], f["title"]) for f in d["findings"]] == [(c.severity, c.owner, c.title) for c in found]
    assert d["remediation"] == [{"step": step, "owner": c.owner} for c in found for step in c.remediation]
    assert d["verification"] == [v for c in found for v in c.verification]


def test_every_cause_has_a_scenario():
    covered = set()
    for path in EXPECTATIONS:
        data = yaml.safe_load(path.read_text()) or {}
        for item in data if isinstance(data, list) else [data]:
            if isinstance(item, dict) and item.get("cause"):
                covered.add(item["cause"])
    assert sorted(set(CAUSES) - covered) == []
