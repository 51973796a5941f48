"""Golden files of the exporters, for the KEPT scenarios only: the diagnosis each gave when the
goldens were made (diagnosis.json.gz: an input, not for review) and its ticket in every format.
Rendering the stored diagnosis keeps these tests about the exporters, not about the runbooks that
other work changes. Every other scenario is diagnosed today and checked by content (test_golden.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS_DIR = ROOT / "tests" / "fixtures" / "scenarios"
GOLDEN = Path(__file__).resolve().parent / "golden"
# One InfiniBand fault, one RoCE fault, one healthy node: the full documents a reviewer reads.
KEPT = ("ib-port-down", "roce-pfc-off", "ib-healthy")
FILES = {"markdown": "ticket.md", "github": "github.md", "jira": "jira.txt", "jira-adf": "jira-adf.json", "json": "ticket.json"}


def scenarios() -> list[str]:
    return sorted(p.parent.name for p in SCENARIOS_DIR.glob("*/bundle.tar.gz"))


def goldens() -> list[str]:
    """The golden folders on disk (KEPT, unless someone left a stray one)."""
    return sorted(p.name for p in GOLDEN.iterdir() if p.is_dir())


def diagnose_bundle(name: str) -> dict:
    """What `diagnose --snapshot tests/fixtures/scenarios/NAME/bundle.tar.gz --format json` prints."""
    from tests.scenarios import expected

    data = expected.diagnose(name, expected.load(name).get("answers"), bundle=f"tests/fixtures/scenarios/{name}/bundle.tar.gz")
    return json.loads(json.dumps(data))  # exactly what the JSON file holds


def stored_diagnosis(name: str) -> dict:
    return json.loads(gzip.decompress((GOLDEN / name / "diagnosis.json.gz").read_bytes()))


def store_diagnosis(name: str, data: dict) -> None:
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    (GOLDEN / name / "diagnosis.json.gz").write_bytes(gzip.compress(text.encode(), mtime=0))


def render_all(diagnosis: dict) -> dict[str, str]:
    """What render_export(diagnosis, fmt) gives for every format, the ticket built once."""
    from allreduce_doctor.export import render_ticket
    from allreduce_doctor.export.load import check_diagnosis
    from allreduce_doctor.export.ticket import build_ticket

    ticket = build_ticket(check_diagnosis(diagnosis))
    return {fmt: render_ticket(ticket, fmt) for fmt in FILES}
