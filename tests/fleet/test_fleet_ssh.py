"""End to end through a real sshd on 127.0.0.1 and real ClusterShell: every alias is a node that
answers from its scenario bundle (remote.py's test-only replay), plus nodes that return garbage,
hang and refuse the connection. Only `scontrol` is a test script."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from allreduce_doctor.doctor import Doctor
from allreduce_doctor.hosts.snapshot import SnapshotHost
from allreduce_doctor.session import Options, Session
from tests.fleet.conftest import ENV, FLEET, as_json, bundle, doctor
from tests.fleet.sshd import GARBAGE

TIMEOUT = 20  # long enough for a replaying node on a loaded 2-CPU machine; the hanging node costs exactly this


def ssh_args(sshd, *more: str) -> list[str]:
    # 0.1 s: the shortest counter window a live read accepts (fleet refuses --interval 0 on nodes)
    return ["--ssh-options", f"-F {sshd.ssh_config}", "--remote-python", sys.executable, "--interval", "0.1", *more]


@pytest.fixture(scope="module")
def fleet_run(sshd, tmp_path_factory):
    """One fleet run over every kind of node, kept for the tests below."""
    kept = tmp_path_factory.mktemp("kept")
    start = time.monotonic()
    proc = doctor("fleet", "--nodes", "gpu[01-04],garbage1,hang1,refused1", "--timeout", str(TIMEOUT),
                  "--format", "json", "--keep-bundles", str(kept), *ssh_args(sshd))
    return proc, time.monotonic() - start, kept


def test_the_odd_nodes_are_named(fleet_run):
    proc, _, _ = fleet_run
    assert proc.returncode == 1
    data = as_json(proc)
    assert data["verdict"] == "fault"
    assert data["root_cause"]["id"] == "setting_mismatch"
    odd = {s["key"]: (s["majority"], s["odd"]) for s in data["fleet"]["settings"] if s["odd"]}
    assert odd == {
        "pfc_priorities": ([3], {"gpu01": {"enp155s0np0": []}}),
        "nccl_env.NCCL_IB_GID_INDEX": ("3", {"gpu02": "5"}),
    }
    assert [f["cause"] for f in data["findings"]] == ["setting_mismatch", "pfc_not_enabled", "wrong_gid_index"]
    assert data["fleet"]["nodes_affected"] == ["gpu01", "gpu02"]
    assert data["fleet"]["per_node"] == {
        "gpu01": {"verdict": "fault", "root_cause": "pfc_not_enabled", "host": "gpu-node-017"},
        "gpu02": {"verdict": "fault", "root_cause": "wrong_gid_index", "host": "gpu-node-021"},
        "gpu03": {"verdict": "healthy", "root_cause": None, "host": "gpu-node-017"},
        "gpu04": {"verdict": "healthy", "root_cause": None, "host": "gpu-node-017"},
    }


def test_nodes_that_give_no_bundle_are_reported_by_name(fleet_run, sshd):
    proc, elapsed, _ = fleet_run
    data = as_json(proc)
    assert data["fleet"]["nodes_unreachable"] == {
        "garbage1": f"returned no bundle (its output began: '{GARBAGE}') (exit 0)",
        "hang1": f"timed out after {TIMEOUT}s",
        "refused1": f"ssh failed: ssh: connect to host 127.0.0.1 port {sshd.ports['refused']}: Connection refused",
    }
    assert data["fleet"]["nodes_checked"] == 4
    assert {"node": "fleet.collect", "reason": f"hang1: timed out after {TIMEOUT}s"} in data["inconclusive"]
    # the hanging node cost its timeout, not more: the run is the timeout plus start-up and diagnosis
    assert TIMEOUT <= elapsed < TIMEOUT + 30


def test_a_collected_bundle_diagnoses_like_its_source(fleet_run):
    """What came back over ssh is the node: its diagnosis equals the source bundle's."""
    _, _, kept = fleet_run
    assert sorted(p.name for p in kept.iterdir()) == [f"gpu0{i}.tar.gz" for i in range(1, 5)]
    for node, scenario in FLEET.items():
        got = Session(Doctor.load(), SnapshotHost(kept / f"{node}.tar.gz"), Options(interval=0)).diagnose().to_dict()
        want = Session(Doctor.load(), SnapshotHost(bundle(scenario)), Options(interval=0)).diagnose().to_dict()
        for key in ("verdict", "root_cause", "findings", "path", "evidence"):
            assert got[key] == want[key], (node, key)


def test_text_report_has_the_fleet_section(sshd):
    proc = doctor("fleet", "--nodes", "gpu[01-03],refused1", *ssh_args(sshd))
    assert proc.returncode == 1
    assert proc.stderr == ""
    section = proc.stdout.split("\nFleet: ", 1)[1].split("\n\nFull evidence")[0]
    assert section.splitlines() == [
        "3 nodes checked, 1 gave no bundle, 2 affected",
        "  No bundle from:",
        f"    refused1  ssh failed: ssh: connect to host 127.0.0.1 port {sshd.ports['refused']}: Connection refused",
        "  Settings that differ (the majority, then the odd nodes):",
        "    pfc_priorities: [3] on 2 of 3 nodes",
        "        gpu01: enp155s0np0=[]",
        "    nccl_env.NCCL_IB_GID_INDEX: \"3\" on 2 of 3 nodes",
        "        gpu02: \"5\"",
        "  19 settings agree on every node.",
        "  Each node's own diagnosis:",
        "    gpu01  fault        pfc_not_enabled",
        "    gpu02  fault        wrong_gid_index",
        "    gpu03  healthy",
    ]


def test_slurm_job_nodes_come_from_scontrol(sshd, fake_scontrol):
    env = fake_scontrol({
        "show job 4242": (0, "JobId=4242 JobName=train\n   JobState=RUNNING Reason=None\n"
                            "   NodeList=gpu[03-04] BatchHost=gpu03\n   ReqNodeList=(null) ExcNodeList=(null)\n", ""),
        "show hostnames gpu[03-04]": (0, "gpu03\ngpu04\n", ""),
    })
    proc = doctor("fleet", "--slurm-job", "4242", "--format", "json", *ssh_args(sshd), env=env)
    data = as_json(proc)
    assert proc.returncode == 0
    assert data["verdict"] == "healthy"
    assert list(data["fleet"]["per_node"]) == ["gpu03", "gpu04"]
    assert data["context"]["source"] == "fleet of 2 nodes, Slurm job 4242"


def test_fanout_queues_nodes_without_eating_their_timeout(sshd):
    """With a fan-out of 1 the nodes run one after another, and each one's timeout starts with it:
    the hanging node (first in node order) uses up its whole timeout, the next one still answers."""
    start = time.monotonic()
    proc = doctor("fleet", "--nodes", "ahang,gpu03", "--fanout", "1", "--timeout", "10", "--format", "json", *ssh_args(sshd))
    data = as_json(proc)
    assert data["fleet"]["nodes_unreachable"] == {"ahang": "timed out after 10s"}
    assert list(data["fleet"]["per_node"]) == ["gpu03"]
    assert time.monotonic() - start >= 10


def test_the_node_needs_only_python_and_sshd(sshd, tmp_path):
    """A live node (this machine) collected with `python3 -I -S -`: no site-packages, so no psutil
    and no PyYAML of the node's own; the job's process is still found, its secrets redacted."""
    from allreduce_doctor.fleet.ssh_collect import SshOptions, collect_nodes

    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                           env={"PATH": "/usr/bin:/bin", "NCCL_IB_HCA": "mlx5_0,mlx5_1",
                                "NCCL_NET_PLUGIN": "ghp_abcdefghijklmnopqrstuvwxyz0123", "AWS_SECRET_ACCESS_KEY": "x"})
    try:
        opts = SshOptions(ssh_options=f"-F {sshd.ssh_config}", python=sys.executable, interval=0.1)
        got = collect_nodes("live1", tmp_path, opts, progress=False)
    finally:
        job.kill()
        job.wait()
    assert got.failed == {}
    host = SnapshotHost(got.bundles["live1"])
    procs = {p.pid: p for p in host.processes()}
    assert procs[job.pid].env == {"NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_NET_PLUGIN": "<redacted>"}
    assert procs[job.pid].env_readable is True
    assert procs[job.pid].cmdline == [sys.executable, "-c", "import time; time.sleep(60)"]


def test_a_clustershell_group_names_the_nodes(sshd, tmp_path):
    (tmp_path / "groups.d").mkdir()
    (tmp_path / "groups.conf").write_text(f"[Main]\ndefault: cluster\nautodir: {tmp_path / 'groups.d'}\n")
    (tmp_path / "groups.d" / "cluster.yaml").write_text('cluster:\n    roce: "gpu[03-04]"\n')
    env = {**ENV, "CLUSTERSHELL_CFGDIR": str(tmp_path)}
    data = as_json(doctor("fleet", "--nodes", "@roce", "--format", "json", *ssh_args(sshd), env=env))
    assert list(data["fleet"]["per_node"]) == ["gpu03", "gpu04"]
    proc = doctor("fleet", "--nodes", "@nosuch", *ssh_args(sshd), env=env)
    assert (proc.returncode, proc.stderr) == (2, "allreduce-doctor: error: --nodes '@nosuch': no nodes in that set\n")
