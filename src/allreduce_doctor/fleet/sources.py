"""Where a fleet's bundles come from when they are already collected: a folder of bundles.

Each `NODE.tar.gz` (or `.tgz`) file and each `NODE/` folder holding a manifest.json is one node,
named after the file or folder; anything else in the folder is ignored.
"""

from __future__ import annotations

import re
from pathlib import Path

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.snapshot.names import ARCHIVE_SUFFIXES, MANIFEST

RECIPE = "collect them with `srun --ntasks-per-node=1 sh -c 'allreduce-doctor collect -o DIR/$(hostname -s).tar.gz'`"


def natural_key(name: str) -> list:
    """gpu2 before gpu10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def find_bundles(directory: str) -> dict[str, Path]:
    """{node: bundle path} for the bundles in `directory`, in natural node order."""
    root = Path(directory)
    if not root.is_dir():
        raise DoctorError(f"--snapshots {directory}: no such directory")
    found: dict[str, Path] = {}
    for entry in root.iterdir():
        name = entry.name
        suffix = next((s for s in ARCHIVE_SUFFIXES if name.endswith(s)), None)
        if suffix and entry.is_file() and not name.startswith("."):
            found[name[: -len(suffix)]] = entry
        elif entry.is_dir() and (entry / MANIFEST).is_file():
            found[name] = entry
    if not found:
        raise DoctorError(f"--snapshots {directory}: no bundles there (NODE.tar.gz files or bundle folders); {RECIPE}")
    return {node: found[node] for node in sorted(found, key=natural_key)}
