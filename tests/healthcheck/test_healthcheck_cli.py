"""`allreduce-doctor healthcheck`: NHC lines, exit codes, scope, budget and bad input, as Slurm sees them."""

from __future__ import annotations

import json
import time

import pytest

from tests.healthcheck.conftest import EXAMPLES, bundle, doctor

PFC_LINE = ("ERROR: allreduce-doctor: pfc_not_enabled: enp155s0np0: "
            "PFC is not enabled on the RoCE priority: the fabric is lossy\n")


def test_pfc_off_example_prints_one_error_line_and_exits_1():
    proc = doctor("healthcheck", "--snapshot", str(EXAMPLES / "roce-pfc-off.tar.gz"))
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, PFC_LINE, "")


def test_healthy_example_prints_nothing_and_exits_0():
    proc = doctor("healthcheck", "--snapshot", str(EXAMPLES / "ib-healthy.tar.gz"))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_counter_faults_are_out_of_scope_without_interval():
    proc = doctor("healthcheck", "--snapshot", bundle("roce-packet-loss"), "--format", "json")
    data = json.loads(proc.stdout)
    assert (proc.returncode, data["verdict"], data["root_cause"]) == (0, "healthy", None)
    assert {"roce.loss", "roce.pause_storm", "roce.congestion", "roce.phy_errors",
            "ib.link_errors", "ib.discards", "ib.xmit_wait"} <= set(data["skipped_checks"])
    assert data["port_rates"] == []  # nothing sampled: absent, never 0


def test_interval_brings_the_counters_in():
    proc = doctor("healthcheck", "--snapshot", bundle("roce-packet-loss"), "--interval", "0")
    assert proc.returncode == 1
    assert proc.stdout == ("ERROR: allreduce-doctor: roce_packet_loss: enp77s0np0: "
                           "packets are lost and go-back-N retransmission collapses throughput\n")


def test_every_finding_is_one_line():
    proc = doctor("healthcheck", "--snapshot", bundle("roce-tc-prio0"))
    assert proc.returncode == 1
    assert [line.split(": ")[1:3] for line in proc.stdout.splitlines()] == [
        ["allreduce-doctor", "traffic_class_mismatch"], ["allreduce-doctor", "ecn_disabled"]]


def test_a_spent_budget_is_inconclusive_not_a_fault():
    proc = doctor("healthcheck", "--snapshot", bundle("roce-pfc-off"), "--budget", "0.001", "--format", "json")
    data = json.loads(proc.stdout)
    assert (proc.returncode, data["verdict"], data["findings"]) == (3, "inconclusive", [])
    reasons = {i["reason"] for i in data["inconclusive"]}
    assert any("not run: the time budget was spent" in r for r in reasons), reasons


def test_unknown_is_printed_as_a_warning_and_is_a_fault_only_under_strict():
    plain = doctor("healthcheck", "--snapshot", bundle("roce-pfc-off"), "--budget", "0.001")
    strict = doctor("healthcheck", "--snapshot", bundle("roce-pfc-off"), "--budget", "0.001", "--strict")
    assert (plain.returncode, strict.returncode) == (3, 1)
    assert plain.stdout.splitlines()[0].startswith("WARNING: allreduce-doctor: unknown: trunk.")
    assert strict.stdout.splitlines()[0].startswith("ERROR: allreduce-doctor: unknown: trunk.")
    assert "not run: the time budget was spent" in plain.stdout


def test_a_live_run_here_stays_within_its_budget():
    budget = 4.0
    start = time.monotonic()
    proc = doctor("healthcheck", "--budget", str(budget), "--format", "json")
    wall = time.monotonic() - start
    data = json.loads(proc.stdout)
    assert proc.returncode in (0, 1, 3, 4), proc.stderr
    assert data["run"]["duration_seconds"] < budget
    assert wall < budget + 1.0  # + the interpreter's start, before the budget's clock starts


@pytest.mark.parametrize("args, message", [
    (["--budget", "0"], "--budget 0: expected more than 0 and at most 3600 seconds"),
    (["--interval", "6"], "--interval 6: expected 0.1 to 5 seconds (the counter window fits in half of --budget 10)"),
    (["--snapshot", "x.tar.gz", "--drain"], "--drain/--resume with --snapshot: name the Slurm node with --node NAME "
                                            "(the bundle's host is not necessarily this node)"),
    (["--node", "gpu01 reason=x", "--drain"], "--node 'gpu01 reason=x': not a Slurm node name (letters, digits, '.', '_', '-')"),
    (["--snapshot", bundle("roce-healthy"), "--textfile", "/tmp/metrics.txt"],
     "--textfile /tmp/metrics.txt: node_exporter's textfile collector reads only files ending in .prom"),
])
def test_bad_input_is_one_line(args, message):
    proc = doctor("healthcheck", *args)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", f"allreduce-doctor: error: {message}\n")
