"""The comparison on hand-made node records: majorities, odd ports and variables, outliers, patterns."""

from __future__ import annotations

import pytest

from allreduce_doctor.fleet.compare import (
    compare_settings,
    majority,
    outliers,
    patterns,
)
from allreduce_doctor.fleet.fleet_diagnosis import fleet_diagnosis
from allreduce_doctor.fleet.node_settings import dscp_ranges


def rec(settings=None, ports=None, env=None, numbers=None, checks=None) -> dict:
    return {"settings": settings or {}, "ports": ports or {}, "env": env, "numbers": numbers or {}, "checks": checks or {}}


def checks(loss="no", pause_tx="no", pause_rx="no", tx_share=0.0, lossy_ports=()) -> dict:
    """A RoCE node's runbook check outcomes, as fleet/analyze.node_result records them."""
    return {"loss": {"outcome": loss, "ports": list(lossy_ports), "worst": {}},
            "pause_tx": {"outcome": pause_tx, "ports": [], "worst": {"pause_tx_fraction": tx_share}},
            "pause_rx": {"outcome": pause_rx, "ports": [], "worst": {}}}


def test_majority_keeps_node_order_on_ties():
    assert majority({"a": 1, "b": 2, "c": 2}) == (2, 2, {"a": 1})
    assert majority({"a": [3], "b": []}) == ([3], 1, {"b": []})  # a tie: the first node's value leads


def test_a_split_is_marked():
    entries = compare_settings({"a": rec({"iommu": "iommu=pt"}), "b": rec({"iommu": "not set"})})
    assert entries == [{"key": "iommu", "title": "IOMMU mode (kernel command line)", "owner": "host",
                        "majority": "iommu=pt", "majority_nodes": 1, "nodes": 2, "split": True, "odd": {"b": "not set"}}]


def test_per_port_values_report_only_the_odd_ports():
    maps = {"a": {"p0": [3], "p1": [3]}, "b": {"p0": [3], "p1": []}, "c": {"p0": [3], "p1": [3]}, "d": {"p0": [3]}}
    (entry,) = compare_settings({n: rec(ports={"pfc_priorities": m}) for n, m in maps.items()})
    assert entry["majority"] == [3]
    assert entry["odd"] == {"b": {"p1": []}, "d": {"p1": "(absent)"}}
    assert (entry["majority_nodes"], entry["nodes"], entry["split"]) == (2, 4, True)


def test_ports_with_different_majorities_list_them():
    maps = {n: {"p0": 9000, "p1": 1500} for n in "abc"}
    (entry,) = compare_settings({n: rec(ports={"netdev_mtu": m}) for n, m in maps.items()})
    assert entry["majority"] == {"p0": 9000, "p1": 1500}
    assert entry["odd"] == {}


def test_an_nccl_variable_missing_on_a_node_is_unset_there():
    envs = {"a": {"NCCL_IB_TC": "106"}, "b": {"NCCL_IB_TC": "106"}, "c": {}, "d": None}
    entries = compare_settings({n: rec(env=e) for n, e in envs.items()})
    assert [(e["key"], e["majority"], e["odd"], e["nodes"]) for e in entries] == [
        ("nccl_env.NCCL_IB_TC", "106", {"c": "(unset)"}, 3)]  # d ran no job: not compared


def test_outliers_by_median_and_mad():
    rates = {"a": 400.0, "b": 400.0, "c": 400.0, "d": 200.0, "e": 400.0}
    found = outliers({n: rec(numbers={"link_rate_gbps": v}) for n, v in rates.items()})
    assert found == [{"metric": "link_rate_gbps", "title": "slowest port's link rate (Gb/s)", "node": "d", "value": 200.0,
                      "median": 400.0, "mad": 0.0, "direction": "low"}]


@pytest.mark.parametrize("values, expected", [
    ({"a": 100.0, "b": 120.0, "c": 110.0, "d": 130.0, "e": 5000.0}, ["e"]),  # far beyond 3.5 modified z and the floors
    ({"a": 100.0, "b": 120.0, "c": 110.0, "d": 130.0, "e": 900.0}, []),  # under the 1000/s absolute floor
    ({"a": 100.0, "b": 120.0, "c": 110.0, "d": 130.0, "e": 0.0}, []),  # fewer pauses is not worse
    ({"a": 0.0, "b": 5000.0}, []),  # two nodes: no median to speak of
])
def test_pause_rate_outliers(values, expected):
    found = outliers({n: rec(numbers={"pause_rate": v}) for n, v in values.items()})
    assert [o["node"] for o in found] == expected


def test_pause_cascade_needs_most_nodes_pausing_by_the_runbook_and_no_loss():
    def fleet(pausing: int, lossy: str | None = None) -> dict:
        return {f"n{i}": rec(checks=checks(loss="yes" if f"n{i}" == lossy else "no", lossy_ports=["p1"] if f"n{i}" == lossy else [],
                                           pause_rx="yes" if i < pausing else "no", tx_share=i / 10))
                for i in range(4)}
    assert [p["cause"] for p in patterns(fleet(3))] == ["pfc_pause_storm"]
    assert patterns(fleet(3))[0]["senders"] == ["n3", "n2", "n1"]  # the most time spent sending pause first
    assert patterns(fleet(2)) == []  # half is not most
    assert [(p["cause"], p["scope"]) for p in patterns(fleet(3, lossy="n1"))] == [("roce_packet_loss", "local")]


def test_many_pause_frames_under_the_runbooks_share_are_no_cascade():
    """What the runbook does not call a pause storm (<= 0.15 of the window), the fleet does not either,
    however many frames were counted (the old rule: 10,000 frames/s on most nodes)."""
    records = {f"n{i}": rec(numbers={"pause_rate": 250_000.0}, checks=checks(tx_share=0.05)) for i in range(4)}
    assert patterns(records) == []


def test_unknown_checks_are_not_pausing_and_ib_nodes_are_left_out():
    records = {"r1": rec(checks=checks(pause_tx="unknown", pause_rx="unknown")), "r2": rec(checks=checks(pause_rx="yes")),
               "ib1": rec(checks={"xmit_wait": {"outcome": "yes", "ports": [], "worst": {}}})}
    assert patterns(records) == []  # one of two RoCE nodes pausing is not most


def test_loss_on_most_nodes_is_fabric_wide():
    records = {f"n{i}": rec(checks=checks(loss="yes" if i else "no", lossy_ports=["p0"] if i else [])) for i in range(3)}
    (found,) = patterns(records)
    assert (found["cause"], found["scope"], found["nodes"], found["ports"]) == (
        "roce_packet_loss", "fleet", ["n1", "n2"], {"n1": ["p0"], "n2": ["p0"]})


def test_dscp_ranges():
    assert dscp_ranges({str(d): d // 8 for d in range(64)}) == "0-7:0 8-15:1 16-23:2 24-31:3 32-39:4 40-47:5 48-55:6 56-63:7"
    assert dscp_ranges({"26": 3, "0": 0}) == "0:0 26:3"
    assert dscp_ranges({"x": 1}) is None


def node_result(verdict: str, cause: str | None = None, **record) -> dict:
    root = {"id": cause, "title": cause, "severity": "critical", "owner": "network"} if cause else None
    return {"verdict": verdict, "root_cause": root, "remediation": [{"step": f"fix {cause}", "owner": "network"}] if cause else [],
            "host": "h", "record": rec(**record)}


def test_fleet_diagnosis_of_nodes_that_agree_and_one_that_failed():
    results = {n: node_result("healthy", settings={"kernel": "6.8"}) for n in ("a", "b", "c")}
    results["d"] = {"node": "d", "error": "unreadable bundle: d.tar.gz: truncated"}
    data = fleet_diagnosis(results, {"e": "timed out after 5s"}, {"source": "test"})
    assert data["verdict"] == "inconclusive"
    assert data["root_cause"] is None
    assert data["inconclusive"] == [{"node": "fleet.collect", "reason": "e: timed out after 5s"},
                                    {"node": "fleet.collect", "reason": "d: unreadable bundle: d.tar.gz: truncated"}]
    assert data["fleet"]["nodes_unreachable"] == {"e": "timed out after 5s", "d": "unreadable bundle: d.tar.gz: truncated"}
    assert data["context"]["kernel"] == "6.8"


def test_a_cause_every_node_finds_on_its_own_leads_when_nothing_differs():
    results = {n: node_result("fault", "ecn_disabled", settings={"kernel": "6.8"}) for n in ("a", "b")}
    results["c"] = node_result("healthy", settings={"kernel": "6.8"})
    data = fleet_diagnosis(results, {}, {})
    assert data["root_cause"]["id"] == "ecn_disabled"
    assert data["root_cause"]["summary"] == ("2 of 3 nodes find ecn_disabled on their own: a, b. Each node's diagnosis "
                                             "has the evidence (allreduce-doctor diagnose --snapshot NODE.tar.gz).")
    assert data["remediation"] == [{"step": "a, b: fix ecn_disabled", "owner": "network"}]


def test_two_nodes_that_disagree_have_no_majority_to_follow():
    results = {"a": node_result("healthy", settings={"iommu": "iommu=pt"}),
               "b": node_result("healthy", settings={"iommu": "intel_iommu=on"})}
    data = fleet_diagnosis(results, {}, {})
    assert data["root_cause"]["id"] == "setting_mismatch"
    assert data["root_cause"]["severity"] == "major"  # a host setting, not the network's
    assert data["remediation"] == [{
        "step": "IOMMU mode (kernel command line) has no clear majority (1 of 2 nodes share the most common value, "
                "iommu=pt): decide the right value and set it on every node.", "owner": "host"}]


def test_the_progress_line(capsys, monkeypatch):
    from allreduce_doctor.fleet import fleet_progress as progress

    monkeypatch.setattr(progress.time, "monotonic", lambda: 100.0)
    bar = progress.ProgressBar("collecting", 8, enabled=True)
    bar.update(3, 1)
    bar.close()
    assert capsys.readouterr().err == ("\r\033[Kcollecting: [##########..........] 4/8 nodes, 1 failed (0s)\r\033[K")
    quiet = progress.ProgressBar("collecting", 8, enabled=False)
    quiet.update(8)
    assert capsys.readouterr().err == ""
