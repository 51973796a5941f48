"""Each node's own diagnosis and its comparison record, from its bundle.

One Doctor (catalogue and runbooks loaded once) and a Session per bundle: the node's diagnosis
is exactly `allreduce-doctor diagnose --snapshot NODE.tar.gz`. Many nodes are spread over a pool
of forked workers (pool.py) that send back one JSON line per node (no pickle); a bundle that
cannot be read, or whose worker died, is reported by name, the rest stand.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.fleet.node_settings import node_record
from allreduce_doctor.fleet.pool import available_cores, run_forked, safely
from allreduce_doctor.hosts.budget import FLEET_BUNDLE_BYTES, OVER_FLEET_HINT
from allreduce_doctor.output import write_file

FORK_ABOVE = 16  # fewer nodes than this are diagnosed in this process: forking costs more


def diagnose_node(doctor, fabric: str, answers: dict[str, str], node: str, bundle: Path,
                  per_node_dir: Path | None = None) -> dict:
    """{node, verdict, root_cause, host, record} for one bundle, or {node, error}."""
    from allreduce_doctor.hosts.snapshot import SnapshotHost
    from allreduce_doctor.session import Options, Session

    try:
        host = SnapshotHost(bundle, FLEET_BUNDLE_BYTES, OVER_FLEET_HINT)
    except DoctorError as err:
        return {"node": node, "error": f"unreadable bundle: {err}"}
    try:
        session = Session(doctor, host, Options(fabric, 0, dict(answers), bundle=str(bundle)))
        diagnosis = session.diagnose()
        identity = host.identity()
    except DoctorError as err:
        return {"node": node, "error": f"unreadable bundle: {err}"}
    finally:
        host.close()  # nothing of this bundle is held while the worker reads the next
    if per_node_dir is not None:  # the whole diagnosis only when asked: to_dict() costs as much as the walk
        data = diagnosis.to_dict()
        try:  # mkstemp beside it and a rename: a planted link at DIR/NODE.json is replaced, never followed
            write_file(per_node_dir / f"{node}.json", json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
        except OSError as err:
            return {"node": node, "error": f"cannot write {per_node_dir / (node + '.json')}: {err.strerror or err}"}
    return node_result(node, diagnosis, session.observations, identity.hostname, identity.kernel, doctor)


def node_result(node: str, diagnosis, observations, hostname: str | None, kernel: str | None, doctor) -> dict:
    """What the fleet Diagnosis reads of one node: {node, verdict, root_cause, remediation, host, record}.
    The record's `checks` are the runbooks' own loss and pause checks on this node's counters
    (runbook/load_checks.py), which the fleet's patterns read: one rule for a node and a fleet."""
    from allreduce_doctor.runbook.load_checks import judge_bundle

    cause = diagnosis.root_cause or {}
    record = node_record(observations, kernel)
    record["checks"] = {name: {"outcome": got["outcome"], "ports": got["ports"], "worst": got["worst"]}
                        for name, got in judge_bundle(observations, doctor, record["settings"].get("fabric")).items()}
    return {
        "node": node,
        "verdict": diagnosis.verdict,
        "root_cause": {k: cause.get(k) for k in ("id", "title", "severity", "owner")} if cause else None,
        "remediation": [dict(r) for r in diagnosis.remediation[:2]] if cause else [],
        "host": hostname,
        "record": record,
    }


def analyze(bundles: dict[str, Path], fabric: str = "auto", answers: dict[str, str] | None = None,
            jobs: int | None = None, per_node_dir: Path | None = None, progress=None) -> tuple[dict[str, dict], dict]:
    """({node: result} for every bundle (diagnose_node's dict) in the order of `bundles`,
    the catalogue and runbook digests the diagnoses used)."""
    from allreduce_doctor.doctor import Doctor

    doctor = Doctor.load()
    digests = {"probe_catalogue": doctor.catalogue.digest, "runbook_hash": doctor.runbook_hash}

    def work(node: str, bundle: Path) -> dict:
        return diagnose_node(doctor, fabric, dict(answers or {}), node, bundle, per_node_dir)

    items = list(bundles.items())
    jobs = max(1, min(jobs or available_cores(), len(items)))
    results = (safely(work, n, b) for n, b in items) if jobs == 1 or len(items) < FORK_ABOVE or not hasattr(os, "fork") \
        else run_forked(items, work, jobs)
    done: dict[str, dict] = {}
    for result in results:
        done[result["node"]] = result
        if progress is not None:
            progress(len(done))
    return {node: done[node] for node in bundles if node in done}, digests
