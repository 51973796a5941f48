"""`collect`: the normal probe run through a RecordingHost. Capture is not a second
implementation, so replaying the bundle gives exactly the observations of this run."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from allreduce_doctor.doctor import load_catalogue
from allreduce_doctor.errors import DoctorError
from allreduce_doctor.hosts.budget import OVER_BUDGET
from allreduce_doctor.hosts.live import LiveHost
from allreduce_doctor.hosts.recording import RecordingHost
from allreduce_doctor.observations import Observations
from allreduce_doctor.probes.runner import ProbeRunner
from allreduce_doctor.progress import stderr_progress


def record(host, out: str, interval: float, progress=None) -> tuple[str, Observations]:
    """Run every probe on `host` through a recorder writing `out`; return (path, observations)."""
    catalogue = load_catalogue()
    recorder = RecordingHost(host, out)
    observations = ProbeRunner(catalogue, recorder, interval, progress).run(None)
    fabric = (observations.get("node.fabric").value or {}).get("fabric", "")
    counts = Counter(o.status for o in observations.values())
    path = recorder.finish(fabric, catalogue.digest, {"probe_status": dict(counts)})
    return str(path), observations


def summarize(path: str, observations: Observations) -> str:
    counts = Counter(o.status for o in observations.values())
    parts = ", ".join(f"{n} {status.replace('_', ' ')}" for status, n in sorted(counts.items()))
    lines = [f"wrote {path}: {len(observations.facts)} facts ({parts})"]
    fabric = observations.get("node.fabric").value or {}
    if fabric.get("fabric") == "none":
        lines.append("no RDMA devices found (/sys/class/infiniband is empty or absent): "
                     "this node has no InfiniBand or RoCE ports to diagnose")
    else:
        lines.append(f"fabric: {fabric.get('fabric')} ({fabric.get('ib_ports', 0)} InfiniBand, "
                     f"{fabric.get('eth_ports', 0)} Ethernet ports)")
    over = sorted(o.fact for o in observations.values() if OVER_BUDGET in (o.reason or ""))
    if over:
        lines.append(f"{len(over)} facts cut or not read: the collection's output budget was spent: " + ", ".join(over))
    missing = [o for o in observations.values() if o.status == "missing" and "root" in (o.reason or "")]
    if missing:
        lines.append(f"{len(missing)} facts need root and were not captured: "
                     + ", ".join(sorted(o.fact for o in missing)))
    return "\n".join(lines)


ARCHIVE_SUFFIX = ".tar.gz"


def check_bundle_path(out: str, force: bool = False) -> None:
    """`collect -o` writes where it is told and nowhere else: into an existing folder, as a
    directory or a .tar.gz, replacing an earlier bundle only with --force."""
    path = Path(out)
    parent = path.parent
    if not parent.is_dir():
        raise DoctorError(f"-o {out}: the folder {parent} does not exist; create it first")
    archive = path.name.endswith(ARCHIVE_SUFFIX)
    if not archive and not path.is_dir() and "." in path.name.lstrip("."):
        raise DoctorError(f"-o {out}: a bundle is a directory or a file ending in {ARCHIVE_SUFFIX}; "
                          f"name it {path.name.split('.')[0] or 'bundle'}{ARCHIVE_SUFFIX} or give a directory")
    if os.path.lexists(path) and not (path.is_dir() and not path.is_symlink() and not any(path.iterdir())) and not force:
        raise DoctorError(f"-o {out}: already exists; add --force to replace the bundle there")


def collect(out: str, interval: float, force: bool = False) -> str:
    check_bundle_path(out, force)
    path, observations = record(LiveHost(), out, interval, stderr_progress())
    return summarize(path, observations)
