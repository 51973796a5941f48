"""A non-editable install works from any directory: runbooks/ and probes/ ship inside the wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                          "-w", str(out), str(ROOT)], capture_output=True, text=True, timeout=300)
    if res.returncode != 0 and "No module named 'hatchling'" in res.stderr:
        pytest.skip("hatchling is not installed (pip install '.[test]' installs it)")
    assert res.returncode == 0, res.stderr
    return next(out.glob("allreduce_doctor-*.whl"))


def test_wheel_ships_runbooks_probes_and_examples(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for data in ("runbooks/trunk.yaml", "runbooks/ib.yaml", "runbooks/roce.yaml", "runbooks/catalogue/causes.yaml", "probes/rdma.yaml",
                 "probes/enumerators.yaml", "examples/roce-pfc-off.tar.gz", "signatures/signatures.yaml",
                 "signatures/candidates.yaml", "hardware/ceilings.yaml"):
        assert f"allreduce_doctor/data/{data}" in names


def test_installed_wheel_diagnoses_from_another_directory(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    res = subprocess.run([sys.executable, "-m", "allreduce_doctor", "--snapshot",
                          str(site / "allreduce_doctor/data/examples/roce-pfc-off.tar.gz")],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert res.returncode == 1, res.stderr
    assert "FAULT FOUND: pfc_not_enabled" in res.stdout
    check = subprocess.run([sys.executable, "-c", "import allreduce_doctor.resources as r; print(r.data_dir('runbooks'))"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert check.stdout.strip().startswith(str(site))
