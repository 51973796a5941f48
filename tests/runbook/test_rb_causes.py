import re
from pathlib import Path

import pytest

from allreduce_doctor.runbook.causes import CAUSES, FAULT_IDS, HEALTHY_IDS

CAUSES_MD = Path("/work/shared/CAUSES.md")


def _catalogue() -> dict[str, str]:
    """id -> section heading (short form) from CAUSES.md."""
    ids, section = {}, ""
    for line in CAUSES_MD.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = re.split(r":| \(", line[3:])[0].strip()
        match = re.match(r"\|\s*`([a-z0-9_]+)`\s*\|", line)
        if match:
            ids[match.group(1)] = section
    return ids


@pytest.mark.skipif(not CAUSES_MD.exists(), reason="CAUSES.md not available")
def test_ids_match_causes_md_exactly():
    assert set(CAUSES) == set(_catalogue())


@pytest.mark.skipif(not CAUSES_MD.exists(), reason="CAUSES.md not available")
def test_sections_match_causes_md():
    assert {c: info.section for c, info in CAUSES.items()} == _catalogue()


def test_healthy_ids():
    assert HEALTHY_IDS == {"expected_hardware_limit", "no_fault_found"}
    assert FAULT_IDS.isdisjoint(HEALTHY_IDS) and FAULT_IDS | HEALTHY_IDS == set(CAUSES)
    assert CAUSES["no_fault_found"].section == "No fault"
    assert CAUSES["wrong_gid_index"].section == "RoCE v2 branch"
    assert CAUSES["socket_fallback"].section == "Transport selection"


def test_titles_are_one_short_line():
    for info in CAUSES.values():
        assert info.title and "\n" not in info.title and len(info.title) <= 100, info.id
