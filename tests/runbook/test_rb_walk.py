"""Walking the example set (tests/runbook/data): paths, findings, verdicts, evidence."""

from __future__ import annotations

import json

from allreduce_doctor.observations import Observation
from allreduce_doctor.runbook import CAUSES, Diagnosis, walk
from tests.runbook.helpers import healthy_ib, healthy_roce

LINK_LOCAL_AT_3 = [
    {"port": "mlx5_0/1", "index": 3, "kind": "link_local"},
    {"port": "mlx5_0/1", "index": 5, "kind": "roce_v2_ipv4"},
]
ROCE_PATH = ["trunk.rdma_present", "trunk.ib_disabled", "trunk.gdr", "trunk.fabric"]


def nodes(diagnosis):
    return [step.node for step in diagnosis.path]


def test_fault_path_wrong_gid_index(example_set):
    d = walk(example_set, healthy_roce(rdma_gids=LINK_LOCAL_AT_3), {})
    assert d.verdict == "fault"
    assert nodes(d) == [*ROCE_PATH, "roce.gid_index"]
    assert [s.outcome for s in d.path] == ["yes", "no", "no", "yes", "yes"]
    assert d.path[-1].means == "NCCL uses a link-local GID"
    assert d.path[-1].value == [{"port": "mlx5_0/1", "index": 3, "kind": "link_local"}]  # the witness
    assert d.root_cause == {
        "id": "wrong_gid_index",
        "title": "NCCL uses a GID that does not route (link-local, RoCE v1 or absent)",
        "severity": "critical",
        "owner": "platform",
        "summary": CAUSES["wrong_gid_index"].summary,  # the leaf names the cause; the catalogue speaks
        "node": "roce.wrong_gid",
    }
    assert d.healthy is None
    assert d.findings[0].cause == "wrong_gid_index" and d.findings[0].node == "roce.gid_index"
    assert d.remediation == [{"step": step, "owner": "platform"} for step in CAUSES["wrong_gid_index"].remediation]
    assert d.verification == list(CAUSES["wrong_gid_index"].verification)
    assert d.runbooks == ["trunk", "roce"]
    assert d.inconclusive == []


def test_steps_carry_facts_with_status_and_source(example_set):
    d = walk(example_set, healthy_roce(rdma_gids=LINK_LOCAL_AT_3), {})
    gid = d.path[-1]
    assert {f["fact"]: f["status"] for f in gid.facts} == {
        "rdma.gids": "ok", "roce.nccl_ports": "ok", "nccl.env.NCCL_IB_GID_INDEX": "ok",
    }
    assert {f["source"] for f in gid.facts} == {"probe:rdma.gids", "probe:roce.nccl_ports", "probe:nccl.env"}
    rows = [(r.node, r.fact, r.observed, r.expected) for r in d.evidence if r.node == "roce.gid_index"]
    assert ("roce.gid_index", "nccl.env.NCCL_IB_GID_INDEX", "3", "the RoCE v2 IPv4-mapped entry") in rows
    # the value of a check without witnesses is the facts it read
    assert d.path[1].value == {"nccl.env.NCCL_IB_DISABLE": None}
    assert d.path[2].value == {"gpu.gdr.enabled": True}


def test_secondary_findings_from_the_sweep(example_set):
    node = healthy_roce(
        net_qos=[{"if": "eth0", "pfc_enabled": []}],
        net_ecn=[{"if": "eth0", "roce_np": False, "roce_rp": True}],
        counters_roce=[{"port": "mlx5_0/1", "rate": {"out_of_sequence": 250.0}}],
    )
    d = walk(example_set, node, {})
    assert d.verdict == "fault"
    assert d.root_cause["id"] == "pfc_not_enabled"
    assert [(f.cause, f.node) for f in d.findings] == [
        ("pfc_not_enabled", "roce.pfc"),
        ("ecn_disabled", "roce.ecn"),
        ("roce_packet_loss", "roce.loss"),
    ]
    assert d.findings[2].value == [{"port": "mlx5_0/1", "rate": {"out_of_sequence": 250.0}}]
    found = ("pfc_not_enabled", "ecn_disabled", "roce_packet_loss")  # root cause first, then the sweep's
    assert d.remediation == [{"step": step, "owner": CAUSES[c].owner} for c in found for step in CAUSES[c].remediation]
    assert d.verification == [v for c in found for v in CAUSES[c].verification]
    assert [(f.severity, f.owner) for f in d.findings] == [(CAUSES[c].severity, CAUSES[c].owner) for c in found]
    assert {r.node for r in d.evidence} >= {"roce.pfc", "roce.ecn", "roce.loss"}


def test_sweep_ignores_unknown_outcomes_and_runbooks_not_entered(example_set):
    node = healthy_roce(
        rdma_gids=LINK_LOCAL_AT_3,
        net_qos=Observation("net.qos", None, "missing", reason="mlnx_qos not installed"),
        counters_ib=[{"port": "mlx5_0/1", "rate": {"symbol_error": 9.0}}],  # ib is never entered
    )
    d = walk(example_set, node, {})
    assert [f.cause for f in d.findings] == ["wrong_gid_index"]


def test_sweep_dedupes_by_cause_and_excludes_the_primary(example_set):
    # gdr off is the primary in trunk; the roce checks are not swept (roce never entered)
    node = healthy_roce(gpu_gdr={"enabled": False}, net_qos=[{"if": "eth0", "pfc_enabled": []}])
    d = walk(example_set, node, {})
    assert d.root_cause["id"] == "gdr_disabled"
    assert [f.cause for f in d.findings] == ["gdr_disabled"]
    assert d.runbooks == ["trunk"]


def test_trunk_sweep_finds_other_trunk_faults(example_set):
    # NCCL_IB_DISABLE=1 is the primary; the gdr check, off the path, is a secondary finding
    node = healthy_roce(nccl_env={"NCCL_IB_DISABLE": "1"}, gpu_gdr={"enabled": False})
    d = walk(example_set, node, {})
    assert [f.cause for f in d.findings] == ["ib_disabled_by_env", "gdr_disabled"]
    assert d.path[-1].value == {"nccl.env.NCCL_IB_DISABLE": "1"}


def test_unknown_observation_gives_inconclusive_not_healthy(example_set):
    node = healthy_roce(net_qos=Observation("net.qos", None, "missing", source="mlnx_qos", reason="permission denied"))
    d = walk(example_set, node, {"validated_scale": "two_nodes"})
    assert d.healthy["id"] == "no_fault_found"
    assert d.verdict == "inconclusive"
    assert d.inconclusive == [{"node": "roce.pfc", "reason": "net.qos is missing: permission denied"}]
    pfc = next(s for s in d.path if s.node == "roce.pfc")
    assert pfc.outcome == "unknown" and pfc.facts == [
        {"fact": "net.qos", "status": "missing", "source": "mlnx_qos", "reason": "permission denied"}
    ]
    assert any(r.fact == "net.qos" and r.status == "missing" and r.observed is None for r in d.evidence)


def test_all_checks_pass_and_question_answered_is_healthy(example_set):
    d = walk(example_set, healthy_roce(), {"validated_scale": "two_nodes"})
    assert d.verdict == "healthy"
    assert nodes(d) == [*ROCE_PATH, "roce.gid_index", "roce.pfc", "roce.ecn", "roce.loss", "ib.scale"]
    assert d.healthy == {
        "id": "no_fault_found",
        "title": "every check passed: nothing found on this node",
        "summary": "Nothing found on this node.",
        "next_steps": ["Run all_reduce_perf across the whole job while watching pause and ECN counters"],
        "node": "ib.healthy_end",
    }
    assert d.root_cause is None and d.findings == [] and d.remediation == [] and d.inconclusive == []
    # jumped trunk -> roce (RUNBOOK form) -> ib.scale (RUNBOOK.node form)
    assert d.runbooks == ["trunk", "roce", "ib"]
    scale = d.path[-1]
    assert (scale.kind, scale.outcome, scale.value, scale.means) == ("question", "two_nodes", "two_nodes", "only a small test passed")


def test_question_choice_leads_to_its_leaf(example_set):
    d = walk(example_set, healthy_roce(), {"validated_scale": "full_job"})
    assert d.verdict == "healthy" and d.healthy["id"] == "expected_hardware_limit"


def test_question_not_answered_is_unknown(example_set):
    d = walk(example_set, healthy_roce(), {})
    assert d.path[-1].outcome == "unknown" and d.path[-1].value is None
    assert d.verdict == "healthy"  # an unanswered question is not missing evidence
    assert d.inconclusive == []
    assert d.unanswered == [{"node": "ib.scale", "reason": "not answered: 'validated_scale' is one of two_nodes, full_job"}]


def test_question_answered_with_an_unlisted_choice_is_unknown(example_set):
    d = walk(example_set, healthy_roce(), {"validated_scale": "whole_cluster"})
    assert d.path[-1].outcome == "unknown" and d.path[-1].value == "whole_cluster"
    assert d.unanswered[0]["reason"] == "answer 'whole_cluster' for 'validated_scale' is not one of two_nodes, full_job"


def test_infiniband_path_with_witnesses(example_set):
    ports = [
        {"name": "mlx5_0/1", "link_layer": "InfiniBand", "state": "ACTIVE", "rate_gbps": 400},
        {"name": "mlx5_1/1", "link_layer": "InfiniBand", "state": "INIT", "rate_gbps": 400},
    ]
    d = walk(example_set, healthy_ib(rdma_ports=ports), {})
    assert nodes(d) == ["trunk.rdma_present", "trunk.ib_disabled", "trunk.gdr", "trunk.fabric", "ib.port_active"]
    assert d.root_cause["id"] == "ib_port_down"
    assert d.path[-1].value == [ports[1]]
    assert d.runbooks == ["trunk", "ib"]


def test_unknown_fabric_goes_to_the_named_node_of_another_runbook(example_set):
    node = healthy_ib(rdma_ports=Observation("rdma.ports", None, "error", reason="ibstat timed out"))
    d = walk(example_set, node, {"validated_scale": "two_nodes"})
    fabric = next(s for s in d.path if s.node == "trunk.fabric")
    assert fabric.outcome == "unknown" and fabric.means == "the link layer is not known"
    assert nodes(d)[nodes(d).index("trunk.fabric") + 1] == "ib.port_active"
    assert d.verdict == "inconclusive"
    assert {"node": "trunk.fabric", "reason": "rdma.ports is error: ibstat timed out"} in d.inconclusive


def test_no_rdma_ports_is_socket_fallback(example_set):
    d = walk(example_set, healthy_ib(rdma_ports=[]), {})
    assert d.root_cause["id"] == "socket_fallback" and nodes(d) == ["trunk.rdma_present"]


def test_a_type_error_in_the_data_makes_the_step_unknown_with_the_reason(example_set):
    node = healthy_ib(gpu_gdr={"enabled": "yes"}, counters_ib=[{"rate": {"symbol_error": 0}}])
    d = walk(example_set, node, {"validated_scale": "two_nodes"})
    gdr = next(s for s in d.path if s.node == "trunk.gdr")
    assert gdr.outcome == "no"  # "yes" == false is simply false
    node = healthy_ib(counters_ib=[{"rate": {"symbol_error": "lots"}}])
    d = walk(example_set, node, {"validated_scale": "two_nodes"})
    assert {
        "node": "ib.errors",
        "reason": "the condition could not be evaluated: column 47: cannot compare a string with a number using '>'",
    } in d.inconclusive


def test_diagnosis_round_trips_through_json(example_set):
    node = healthy_roce(
        net_qos=[{"if": "eth0", "pfc_enabled": []}],
        net_ecn=Observation("net.ecn", None, "missing", reason="no sysfs ecn"),
        counters_roce=[{"port": f"p{i}", "rate": {"out_of_sequence": float("nan") if i == 0 else 1.0}} for i in range(30)],
    )
    d = walk(example_set, node, {})
    data = json.loads(json.dumps(d.to_dict(), allow_nan=False))
    assert set(data) == {
        "verdict", "root_cause", "healthy", "findings", "path", "evidence", "remediation", "verification",
        "inconclusive", "unanswered", "runbooks", "context",
    }
    assert set(data["path"][0]) == {"node", "kind", "title", "outcome", "means", "value", "facts", "badge", "decides"}
    assert set(data["findings"][0]) == {"cause", "title", "severity", "owner", "node", "value",
                                        "confidence", "supporting", "contradicting", "next_step"}
    assert set(data["evidence"][0]) == {"node", "fact", "observed", "expected", "source", "status", "reason"}
    again = Diagnosis.from_dict(data)
    assert again == Diagnosis.from_dict(again.to_dict())
    assert again.to_dict() == data
    loss = next(f for f in data["findings"] if f["cause"] == "roce_packet_loss")
    assert len(loss["value"]) == 20  # witnesses truncated (29 matched)
