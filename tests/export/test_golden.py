"""Golden files: every format for every scenario bundle, rendered from the stored diagnosis.

After an intended change of the exporters: PYTHONPATH=src python -m tests.export.make_golden,
then review the diff. After a runbook change: the same with --diagnose.
"""

from __future__ import annotations

import json

import pytest
from tests.export.adf_schema import validate
from tests.export.goldens import FILES, GOLDEN, diagnose_bundle, goldens, render_all, scenarios, stored_diagnosis

REGEN = "regenerate: PYTHONPATH=src python -m tests.export.make_golden"


def test_every_scenario_bundle_has_goldens():
    missing = sorted(set(scenarios()) - set(goldens()))
    assert not missing, f"no exporter goldens for {missing}; {REGEN}"
    assert len(goldens()) >= 10


@pytest.mark.parametrize("name", goldens())
def test_golden(name):
    rendered = render_all(stored_diagnosis(name))
    for fmt, filename in FILES.items():
        expected = (GOLDEN / name / filename).read_text()
        assert rendered[fmt] == expected, f"{name}/{filename} differs; {REGEN} and review the diff"


@pytest.mark.parametrize("name", scenarios())
def test_todays_diagnosis_of_every_bundle_exports_within_limits(name):
    """Whatever the runbooks say today, every format renders and keeps its limits, and the stored
    golden input still has today's verdict and cause (else the goldens show a stale finding)."""
    today = diagnose_bundle(name)
    if name in goldens():
        stored = stored_diagnosis(name)
        assert [(d["verdict"], (d["root_cause"] or d["healthy"] or {}).get("id")) for d in (stored, today)] == \
            [(today["verdict"], (today["root_cause"] or today["healthy"] or {}).get("id"))] * 2, REGEN
    docs = render_all(today)
    ticket = json.loads(docs["json"])
    assert len(ticket["title"]) <= 255 and "\n" not in ticket["title"]
    assert len(docs["github"]) <= 65_536 and len(docs["markdown"]) <= 65_536
    assert len(docs["jira"]) <= 32_767
    adf = json.loads(docs["jira-adf"])
    assert validate(adf) == []
    assert len(json.dumps(adf, ensure_ascii=False, separators=(",", ":"))) <= 32_767
    assert ticket["fingerprint"] in docs["github"] and ticket["labels"][-1] == ticket["fingerprint"]
