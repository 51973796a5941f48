"""--drain and --resume through a fake scontrol: NHC's rules, above all "never resume a node
drained by someone else" and "never overwrite someone else's drain reason"."""

from __future__ import annotations

import pytest

from allreduce_doctor.healthcheck.slurm_drain import NodeState, node_state
from allreduce_doctor.hosts.live import LiveHost
from tests.healthcheck.conftest import EXAMPLES, doctor, show_node

FAULTY = str(EXAMPLES / "roce-pfc-off.tar.gz")
HEALTHY = str(EXAMPLES / "ib-healthy.tar.gz")
SHOW = ["show", "node", "gpu01"]


def run(fake, snapshot: str, *args: str):
    return doctor("healthcheck", "--snapshot", snapshot, "--node", "gpu01", *args, env=fake.env)


def test_a_fault_drains_the_node_with_our_reason(fake_scontrol):
    fake = fake_scontrol({"show node gpu01": (0, show_node("gpu01", "IDLE"), "")})
    proc = run(fake, FAULTY, "--drain")
    assert fake.calls == [SHOW, ["update", "nodename=gpu01", "state=drain", "reason=ard: pfc_not_enabled"]]
    assert (proc.returncode, proc.stderr) == (1, "allreduce-doctor: drained gpu01: ard: pfc_not_enabled\n")


def test_someone_elses_drain_reason_is_never_overwritten(fake_scontrol):
    fake = fake_scontrol({"show node gpu01": (0, show_node("gpu01", "IDLE+DRAIN", "bad DIMM (ticket 42)"), "")})
    proc = run(fake, FAULTY, "--drain")
    assert fake.calls == [SHOW]
    assert proc.stderr == ("allreduce-doctor: not draining gpu01: already IDLE+DRAIN by someone else "
                           "(Reason=bad DIMM (ticket 42))\n")


def test_our_own_drain_gets_the_new_cause(fake_scontrol):
    fake = fake_scontrol({"show node gpu01": (0, show_node("gpu01", "MIXED+DRAIN", "allreduce-doctor: ecn_disabled"), "")})
    run(fake, FAULTY, "--drain")
    assert fake.calls[-1] == ["update", "nodename=gpu01", "state=drain", "reason=ard: pfc_not_enabled"]


def test_the_same_drain_is_not_repeated(fake_scontrol):
    fake = fake_scontrol({"show node gpu01": (0, show_node("gpu01", "IDLE+DRAIN", "ard: pfc_not_enabled"), "")})
    proc = run(fake, FAULTY, "--drain")
    assert fake.calls == [SHOW]
    assert proc.stderr == "allreduce-doctor: gpu01 is already drained: ard: pfc_not_enabled\n"


def test_a_down_node_is_left_alone(fake_scontrol):
    fake = fake_scontrol({"show node gpu01": (0, show_node("gpu01", "DOWN+NOT_RESPONDING", "Not responding"), "")})
    proc = run(fake, FAULTY, "--drain")
    assert fake.calls == [SHOW]
    assert proc.stderr == "allreduce-doctor: not draining gpu01: it is DOWN+NOT_RESPONDING (left as it is)\n"


@pytest.mark.parametrize("reason", ["ard: pfc_not_enabled", "allreduce-doctor: pfc_not_enabled"])  # ours, and before 0.2
def test_healthy_resumes_a_node_we_drained(fake_scontrol, reason):
    fake = fake_scontrol({"show node gpu01": (0, show_node("gpu01", "IDLE+DRAIN", reason), "")})
    proc = run(fake, HEALTHY, "--resume")
    assert fake.calls == [SHOW, ["update", "nodename=gpu01", "state=resume"]]
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == f"allreduce-doctor: resumed gpu01 (was: {reason})\n"


def test_the_reason_leaves_sinfo_r_most_of_its_20_characters():
    from allreduce_doctor.healthcheck.slurm_drain import DRAIN_LEADER

    shown = f"{DRAIN_LEADER} pfc_not_enabled"[:20]  # sinfo(1) --list-reasons: "%20E"
    assert shown == "ard: pfc_not_enabled"


@pytest.mark.parametrize("state, reason, why", [
    ("IDLE+DRAIN", "maintenance: reseat HCA", "Reason=maintenance: reseat HCA"),
    ("IDLE+DRAIN", "NHC: check_hw_ib: No IB port mlx5_0:1 is ACTIVE", "Reason=NHC: check_hw_ib: No IB port mlx5_0:1 is ACTIVE"),
    ("DOWN+DRAIN", "allreduce-doctorX: lookalike", "Reason=allreduce-doctorX: lookalike"),
    ("IDLE+DRAIN", "allreduce-doctor:x", "Reason=allreduce-doctor:x"),
    ("IDLE+DRAIN", "ard:s are down", "Reason=ard:s are down"),
    ("IDLE+DRAIN", "ardent: reseat", "Reason=ardent: reseat"),
    ("IDLE+DRAIN", None, "no reason set"),
])
def test_never_resume_a_node_drained_by_someone_else(fake_scontrol, state, reason, why):
    fake = fake_scontrol({"show node gpu01": (0, show_node("gpu01", state, reason), "")})
    proc = run(fake, HEALTHY, "--resume")
    assert fake.calls == [SHOW]  # looked, never touched
    assert proc.stderr == f"allreduce-doctor: not resuming gpu01: drained by someone else ({why})\n"


def test_a_node_in_service_is_not_resumed(fake_scontrol):
    fake = fake_scontrol({"show node gpu01": (0, show_node("gpu01", "ALLOCATED"), "")})
    proc = run(fake, HEALTHY, "--drain", "--resume")
    assert fake.calls == [SHOW]
    assert proc.stderr == "allreduce-doctor: gpu01 is not drained (ALLOCATED): nothing to resume\n"


def test_inconclusive_neither_drains_nor_resumes(fake_scontrol, unknown_qos):
    fake = fake_scontrol({})
    proc = run(fake, unknown_qos, "--drain", "--resume")
    assert (proc.returncode, fake.calls) == (3, [])
    assert proc.stdout.splitlines()[0].startswith("WARNING: allreduce-doctor: unknown: roce.pfc: roce.priority is missing")


def test_strict_drains_an_inconclusive_node(fake_scontrol, unknown_qos):
    fake = fake_scontrol({"show node gpu01": (0, show_node("gpu01", "IDLE"), "")})
    proc = run(fake, unknown_qos, "--drain", "--strict")
    assert proc.returncode == 1
    assert fake.calls[-1] == ["update", "nodename=gpu01", "state=drain", "reason=ard: inconclusive (--strict)"]


def test_a_spent_budget_leaves_slurm_alone(fake_scontrol):
    fake = fake_scontrol({})
    proc = run(fake, FAULTY, "--drain", "--budget", "0.001", "--strict")
    assert (proc.returncode, fake.calls) == (1, [])
    assert proc.stderr == "allreduce-doctor: error: cannot drain gpu01: the time budget was spent\n"


def test_a_failing_scontrol_is_one_line_and_keeps_the_verdict(fake_scontrol):
    fake = fake_scontrol({"show node gpu01": (1, "", "scontrol: error: Invalid node name specified\n")})
    proc = run(fake, FAULTY, "--drain")
    assert (proc.returncode, proc.stdout.count("ERROR:")) == (1, 1)
    assert proc.stderr == ("allreduce-doctor: error: cannot drain gpu01: scontrol show node gpu01 failed: "
                           "scontrol: error: Invalid node name specified\n")


def test_a_live_run_names_the_node_from_slurmd(fake_scontrol):
    fake = fake_scontrol({"show node gpu07": (0, show_node("gpu07", "IDLE"), "")})
    proc = doctor("healthcheck", "--resume", "--budget", "5", env={**fake.env, "SLURMD_NODENAME": "gpu07"})
    # this machine: nothing found (0, resumed), or no GPUs and no RDMA (4: not healthy, so not resumed)
    assert proc.returncode in (0, 4), proc.stdout + proc.stderr
    assert fake.calls == ([["show", "node", "gpu07"]] if proc.returncode == 0 else [])


def test_show_node_parsing(monkeypatch, fake_scontrol):
    fake = fake_scontrol({"show node a": (0, show_node("a", "MIXED+DRAIN", "allreduce-doctor: ecn_disabled"), ""),
                          "show node b": (0, show_node("b", "IDLE") + "   Reason=(null)\n", "")})
    monkeypatch.setenv("PATH", fake.env["PATH"])
    assert node_state(LiveHost(), "a") == NodeState("MIXED+DRAIN", "allreduce-doctor: ecn_disabled")
    assert node_state(LiveHost(), "b") == NodeState("IDLE", "")
