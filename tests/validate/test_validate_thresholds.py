"""validate judges each node's counters under load with the single-node runbooks' own checks
(runbook/load_checks.py), so their limits hold at the edge: a value at the limit is not over it.
Each scenario puts every node at a runbook limit and one or two just over it; validate's old
rules of its own (any port drop, pause frames on most nodes, CNPs sent + handled above 10k/s, an
absolute 1M xmit_wait ticks/s) flagged every node of each."""

from __future__ import annotations

import pytest

from tests.validate.harness import cause, run_scenario

pytestmark = pytest.mark.slow  # real-time runs: each waits on validate's counter intervals (6-9 s a test)


def step(data, node):
    return next(p for p in data["path"] if p["node"] == node)


def rows(data, node):
    return [e for e in data["evidence"] if e["node"] == node]


def test_loss_is_transport_loss_not_a_port_drop_on_another_priority(tmp_path, monkeypatch):
    data, _ = run_scenario("loss_edges", tmp_path, monkeypatch)
    assert [f["cause"] for f in data["findings"]] == ["roce_packet_loss"]
    assert data["findings"][0]["value"] == {"nodes": ["gpu02"], "ports": {"gpu02": ["enp60s0np0"]}}
    [row] = rows(data, "validate.loss")
    assert row["fact"] == "roce.loss" and row["expected"] == "no transport loss; discards <= 1 ppm on the priority"
    assert row["observed"] == {"node": "gpu02", "ports": ["enp60s0np0"], "rdma_loss": 1, "share": "2 of 2 rounds under load"}


def test_pause_time_is_judged_rx_and_tx_apart_over_the_limit_only(tmp_path, monkeypatch):
    data, _ = run_scenario("pause_edges", tmp_path, monkeypatch)
    # gpu02 transmits pause 15.0001% of the time, gpu03 receives it as long, gpu04 is at 15% both ways
    assert cause(data) == "pfc_pause_storm" and [f["cause"] for f in data["findings"]] == ["pfc_pause_storm"]
    assert data["findings"][0]["value"] == {"nodes": ["gpu02", "gpu03"], "root": "gpu02"}
    assert [(r["fact"], r["observed"]["node"]) for r in rows(data, "validate.pause")] == [
        ("roce.pause_storm", "gpu02"), ("roce.pause_rx", "gpu03")]
    assert data["root_cause"]["summary"] == (
        "PFC holds NCCL's priority paused beyond the runbooks' limit on 2 of 4 RoCE nodes. The root is most likely "
        "gpu02: it pauses its peers the most (transmit pause 15.0% of the time).")


def test_cnps_over_the_limit_sent_or_handled_not_their_sum(tmp_path, monkeypatch):
    data, _ = run_scenario("cnp_edges", tmp_path, monkeypatch)
    assert [f["cause"] for f in data["findings"]] == ["roce_congestion"]
    assert data["findings"][0]["value"] == {"nodes": ["gpu02", "gpu03"]}
    assert step(data, "validate.dcqcn")["value"] == {"gpu02": ["enp26s0np0"], "gpu03": ["enp155s0np0"]}
    assert [r["observed"] for r in rows(data, "validate.dcqcn")] == [
        {"node": "gpu02", "ports": ["enp26s0np0"], "cnp_sent_rate": 10001.0, "cnp_handled_rate": 10000.0,
         "share": "2 of 2 rounds under load"},
        {"node": "gpu03", "ports": ["enp155s0np0"], "cnp_sent_rate": 10000.0, "cnp_handled_rate": 10001.0,
         "share": "2 of 2 rounds under load"}]


def test_xmit_wait_is_a_share_of_link_time(tmp_path, monkeypatch):
    data, _ = run_scenario("xmit_wait_edges", tmp_path, monkeypatch)
    # every port of every node waits 15% of link time (937.5M ticks/s at 400 Gb/s); gpu02's first just over
    assert [f["cause"] for f in data["findings"]] == ["ib_congestion"]
    assert data["findings"][0]["value"] == {"nodes": ["gpu02"]}
    [row] = rows(data, "validate.credits")
    assert (row["fact"], row["expected"]) == ("ib.xmit_wait", "port_xmit_wait <= 15% of link time")
    assert row["observed"] == {"node": "gpu02", "ports": ["mlx5_0/1"], "xmit_wait_fraction": 0.1501,
                               "share": "2 of 2 rounds under load"}
    assert [p["node"] for p in data["path"]] == ["validate.launch", "validate.watch", "validate.busbw",
                                                 "validate.credits", "validate.stragglers"]  # no RoCE checks on IB


def test_counters_that_cannot_decide_leave_the_run_inconclusive(tmp_path, monkeypatch):
    data, _ = run_scenario("loss_unmeasured", tmp_path, monkeypatch)
    assert data["verdict"] == "inconclusive" and data["findings"] == []
    assert step(data, "validate.loss")["outcome"] == "unknown"
    assert data["inconclusive"] == [{"node": "validate.loss", "reason": "gpu04: roce.counters: out_of_sequence is "
                                     "missing from one sample or unreadable (all 8 ports)"}]
