"""Issue 29 item 1: the usual suspects of a context when no line decides.

The example of the issue (a one-line report of a PCIe A100 box on an AMD EPYC) gets the IOMMU / ACS / P2P
suspects of runbooks/catalogue/usual_suspects.yaml, low, each with its cause's catalogue paste.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from allreduce_doctor.evidence import suspects
from allreduce_doctor.runbook.causes import CAUSES

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = ROOT / "tests" / "fixtures" / "outputs"
EXAMPLE = "8x A100 80GB PCIe, AMD EPYC 7543, all_reduce_perf -g 8 gives low busbw\n"


def _diagnose(tmp_path: Path, text: str, fmt: str = "json") -> tuple[int, str]:
    paste = tmp_path / "paste.txt"
    paste.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "allreduce_doctor", "diagnose", "--evidence", str(paste),
                           "--format", fmt], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    return proc.returncode, proc.stdout


def test_the_issues_example_gets_the_amd_pcie_suspects_low_with_their_pastes(tmp_path):
    rc, out = _diagnose(tmp_path, EXAMPLE)
    d = json.loads(out)
    got = [(f["cause"], f["confidence"], f["next_step"]) for f in d["findings"]]
    assert got == [(c, "low", CAUSES[c].paste) for c in ("iommu_enabled", "pcie_acs_enabled", "p2p_disabled_by_env")]
    assert d["verdict"] == "inconclusive" and rc != 0
    line = d["findings"][0]["supporting"][0]
    assert "usual suspect for amd cpu, pcie gpus, slow (amd_pcie_gpus)" in line
    assert "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html" in line


def test_no_symptom_no_suspects():
    ctx = suspects.Context(platform={"amd_cpu", "pcie_gpus"})
    assert suspects.suspects_for(ctx) == []
    ctx.symptom = "slow"
    assert [s.cause for _row, s in suspects.suspects_for(ctx)][:2] == ["iommu_enabled", "pcie_acs_enabled"]


def test_the_table_names_only_faults_with_a_paste_and_known_sources():
    t = suspects.table()
    for row in t.rows:
        for s in row.suspects:
            assert CAUSES[s.cause].paste and not CAUSES[s.cause].healthy
            assert s.basis and all(b.startswith("https://") for b in s.basis)


@pytest.mark.parametrize(("data", "message"), [
    ({"sources": {}, "words": {}, "rows": [{"id": "x", "when": {"scope": ["two"]}, "suspects": []}]},
     "rows[0].when.scope: each is one of one_host, several, unknown"),
    ({"sources": {"a": "https://x"}, "words": {}, "rows": [{"id": "x", "when": {}, "suspects": [
        {"cause": "no_such", "basis": ["a"]}]}]}, "rows[0].suspects[0]: 'no_such' is no fault of the cause catalogue"),
])
def test_a_bad_row_is_one_line_naming_it(data, message):
    with pytest.raises(suspects.SuspectsError) as exc:
        suspects.load(Path("t.yaml"), data)
    assert str(exc.value) == f"t.yaml: {message}"
