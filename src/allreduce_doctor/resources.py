"""Where the shipped data lives: runbooks/, probes/, examples/, signatures/ and hardware/.

In a wheel they are package data under allreduce_doctor/data/; in a source checkout (editable
install, or PYTHONPATH=src) they are the folders at the repository root.
"""

from __future__ import annotations

from pathlib import Path


def data_dir(name: str) -> Path:
    # The package's own folder, not importlib.resources: importing that costs more than a diagnosis's
    # walk, and the data is read as plain files anyway (a wheel installs it as allreduce_doctor/data/).
    packaged = Path(__file__).resolve().parent / "data" / name
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"allreduce-doctor data folder {name!r} is missing from the installation")


def runbook_files() -> list[Path]:
    return sorted(data_dir("runbooks").glob("*.yaml"))


def probe_files() -> list[Path]:
    return sorted(data_dir("probes").glob("*.yaml"))


def example(name: str) -> Path:
    return data_dir("examples") / name


def hardware_file(name: str) -> Path:
    return data_dir("hardware") / name
