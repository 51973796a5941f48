"""The format-neutral ticket: title, fingerprint, scope, confidence, versions, bandwidth, fleet."""

from __future__ import annotations

import copy
import hashlib
import json

from allreduce_doctor.export import render_export
from allreduce_doctor.export.ticket import build_ticket, fingerprint
from allreduce_doctor.status import STEP_UNKNOWN
from tests.export.goldens import diagnose_bundle, stored_diagnosis


def ticket(name="roce-pfc-off", **changes):
    d = copy.deepcopy(stored_diagnosis(name))
    for key, value in changes.items():
        d[key] = value
    return build_ticket(d)


def test_fault_ticket_core_fields():
    t = ticket()
    assert t.title == "pfc_not_enabled on gpu-node-017: PFC is not enabled on the RoCE priority: the fabric is lossy"
    assert (t.verdict, t.cause, t.severity, t.owner, t.fabric) == ("fault", "pfc_not_enabled", "critical", "network", "RoCE v2")
    basis = json.dumps({"cause": "pfc_not_enabled", "fabric": "roce", "nodes": ["gpu-node-017"]}, sort_keys=True)
    assert t.fingerprint == "ard-" + hashlib.sha256(basis.encode()).hexdigest()[:12]
    assert t.labels == ["allreduce-doctor", "pfc_not_enabled", t.fingerprint]
    assert t.scope == {"host": "gpu-node-017", "slurm_job": None, "nodes_checked": 1, "nodes_affected": ["gpu-node-017"]}
    assert t.deciding == ["roce.pfc"]
    assert t.root_cause["confidence"] == "high"
    assert t.symptom[0] == "Check failed: PFC is enabled on some priority: PFC is enabled on no priority at all."
    assert t.remediation[0]["owner"] == "network"
    context = stored_diagnosis("roce-pfc-off")["context"]  # the hashes change with the knowledge: the ticket carries them
    assert dict(t.provenance) == {"tool": "allreduce-doctor 0.1.0", "runbook hash": context["runbook_hash"],
                                  "probe catalogue": context["probe_catalogue"], "runbooks": "trunk, roce",
                                  "source": "snapshot bundle tests/fixtures/scenarios/roce-pfc-off/bundle.tar.gz",
                                  "when": "not recorded"}
    assert t.bundle == "tests/fixtures/scenarios/roce-pfc-off/bundle.tar.gz"


def test_fingerprint_depends_on_cause_fabric_and_nodes_only():
    a = fingerprint("link_errors", "ib", ["n1", "n2"])
    assert a == fingerprint("link_errors", "ib", ["n2", "n1", "n1"])
    assert len({a, fingerprint("link_errors", "roce", ["n1", "n2"]), fingerprint("link_degraded", "ib", ["n1", "n2"]),
                fingerprint("link_errors", "ib", ["n1"])}) == 4
    d = stored_diagnosis("roce-pfc-off")
    later = copy.deepcopy(d)
    later["evidence"] = later["evidence"][:3]
    later["context"]["tool_version"] = "9.9"
    assert build_ticket(d).fingerprint == build_ticket(later).fingerprint


def test_title_is_one_line_of_at_most_255_characters_and_keeps_the_measurement():
    d = diagnose_bundle("roce-at-hardware-limit")
    t = build_ticket(d)
    assert t.title == ("expected_hardware_limit on gpu-node-017: the bandwidth is what the hardware can carry, "
                       "not a fault (busbw 372 GB/s vs 400 GB/s expected)")
    assert t.bandwidth == {"measured": 372.0, "expected": 400.0, "unit": "GB/s", "hardware": "at_limit",
                           "hardware_note": "NICs: 372 of about 400 GB/s across nodes (8 NICs per node x 400 Gb/s "
                                            "each (50 GB/s)): at the hardware's limit, not a fault"}
    assert t.symptom[0] == "Measured all-reduce busbw 372 GB/s vs 400 GB/s expected (93% of expected)."
    d["healthy"]["title"] = "very\nlong " * 60
    long = build_ticket(d).title
    assert len(long) == 255 and "\n" not in long
    assert long.endswith("... (busbw 372 GB/s vs 400 GB/s expected)")


def test_healthy_and_inconclusive_tickets():
    t = ticket("ib-healthy")
    assert (t.severity, t.owner, t.cause) == ("none", "-", "no_fault_found")
    assert t.scope["nodes_affected"] == [] and t.next_steps
    assert t.root_cause["confidence"] == "high"  # an unanswered question is not missing evidence
    d = copy.deepcopy(stored_diagnosis("ib-port-down"))
    d.update(verdict="inconclusive", root_cause=None, findings=[],
             inconclusive=[{"node": "trunk.ports_active", "reason": "rdma.ports: permission denied"}])
    d["path"][-1]["outcome"] = "unknown"
    t = build_ticket(d)
    assert t.title == "inconclusive on gpu-node-017: evidence missing (trunk.ports_active)"
    assert (t.severity, t.root_cause["confidence"]) == ("unknown", "low")
    assert t.symptom == ["The decision tree could not finish: 1 check(s) lacked evidence (trunk.ports_active)."]
    assert "## Inconclusive (missing evidence is never counted as healthy)" in render_export(d, "github")


def test_a_check_without_evidence_lowers_confidence():
    d = copy.deepcopy(stored_diagnosis("roce-pfc-off"))
    d["path"][3].update(outcome="unknown", badge=STEP_UNKNOWN)  # a Diagnosis carries each step's badge
    t = build_ticket(d)
    assert t.root_cause["confidence"] == "medium"
    assert t.root_cause["confidence_reason"] == "1 earlier check(s) lacked evidence (trunk.uverbs)"
    assert t.path[3]["mark"] == "unknown"


def test_versions_from_context_and_evidence():
    assert ticket().versions == [("kernel", "6.8.0-45-generic"), ("GPU driver", "unknown"), ("NCCL", "unknown"),
                                 ("rdma-core", "unknown"), ("NIC firmware", "28.41.1000")]
    d = copy.deepcopy(stored_diagnosis("roce-pfc-off"))
    for record in _records(d):
        if record.get("device") == "mlx5_2" and "fw_ver" in record:
            record["fw_ver"] = "28.39.2048"
    d["evidence"].append({"node": "trunk.evidence", "fact": "log.nccl", "observed": {"version": "2.21.5+cuda12.4"},
                          "expected": "", "source": "paste.txt", "status": "ok", "reason": ""})
    d["context"]["versions"] = {"gpu_driver": "550.90.07", "rdma_core": "50.0"}
    assert build_ticket(d).versions == [("kernel", "6.8.0-45-generic"), ("GPU driver", "550.90.07"),
                                        ("NCCL", "2.21.5+cuda12.4"), ("rdma-core", "50.0"),
                                        ("NIC firmware", "28.41.1000 on 7, 28.39.2048 on 1")]


def _records(value):
    if isinstance(value, dict):
        yield value
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            yield from _records(item)


def test_slurm_job_from_the_job_environment():
    d = copy.deepcopy(stored_diagnosis("roce-pfc-off"))
    d["evidence"].append({"node": "trunk.ib_disable_env", "fact": "nccl.processes", "status": "ok", "reason": "",
                          "source": "psutil", "expected": "", "observed": [{"pid": 7, "env": {"SLURM_JOB_ID": "48213"}}]})
    t = build_ticket(d)
    assert t.scope["slurm_job"] == "48213"
    assert "| Slurm job | 48213 |" in render_export(d, "github")


FLEET = {"nodes_checked": 16, "nodes_affected": ["gpu-node-003", "gpu-node-017"],
         "settings": [{"key": "roce.pfc_priorities", "majority": [3], "odd": {"gpu-node-017": [], "gpu-node-003": []}},
                      {"key": "nccl.env.NCCL_IB_GID_INDEX", "majority": "3", "odd": {"gpu-node-009": "1"}}]}


def test_fleet_comparison():
    d = copy.deepcopy(stored_diagnosis("roce-pfc-off"))
    d["fleet"] = FLEET
    t = build_ticket(d)
    assert t.title == ("pfc_not_enabled on 2 of 16 nodes (gpu-node-003, gpu-node-017): PFC is not enabled on the "
                       "RoCE priority: the fabric is lossy")
    assert t.fingerprint == fingerprint("pfc_not_enabled", "roce", ["gpu-node-003", "gpu-node-017"])
    gh = render_export(d, "github")
    assert "## Fleet comparison\n\n16 nodes checked, 2 affected: gpu-node-003, gpu-node-017.\n\n" in gh
    assert "| `roce.pfc_priorities` | \\[3\\] | gpu-node-003=\\[\\], gpu-node-017=\\[\\] |" in gh
    assert "| Nodes affected | 2 of 16 checked: gpu-node-003, gpu-node-017 |" in gh
    assert "|{{nccl.env.NCCL\\_IB\\_GID\\_INDEX}}|3|gpu\\-node\\-009=1|" not in render_export(d, "jira")
    assert "|{{nccl.env.NCCL_IB_GID_INDEX}}|3|gpu-node-009=1|" in render_export(d, "jira")
    assert json.loads(render_export(d, "json"))["fleet"]["settings"][1] == {
        "key": "nccl.env.NCCL_IB_GID_INDEX", "majority": "3", "odd": [["gpu-node-009", "1"]]}
