"""Where the shipped data lives: runbooks/, probes/ and examples/.

In a wheel they are package data under allreduce_doctor/data/; in a source checkout (editable
install, or PYTHONPATH=src) they are the folders at the repository root.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_dir(name: str) -> Path:
    packaged = resources.files("allreduce_doctor") / "data" / name
    if packaged.is_dir():
        return Path(str(packaged))
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
