"""What the node runs (payload, remote frame) and how its answer is read, without ssh."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile

import pytest

from allreduce_doctor.doctor import Doctor
from allreduce_doctor.fleet.payload import package_zip, remote_command, remote_script
from allreduce_doctor.fleet.remote import REPLAY_ENV, NodeHost, frame
from allreduce_doctor.fleet.ssh_collect import decode_frame, failure_reason
from allreduce_doctor.hosts.snapshot import SnapshotHost
from allreduce_doctor.session import Options, Session
from tests.fleet.conftest import GID5


def test_the_payload_carries_the_package_the_probes_and_pure_python_yaml():
    names = zipfile.ZipFile(io.BytesIO(package_zip())).namelist()
    assert "allreduce_doctor/fleet/remote.py" in names
    assert "allreduce_doctor/capture.py" in names
    assert "allreduce_doctor/data/probes/rdma.yaml" in names
    assert "yaml/__init__.py" in names and "yaml/constructor.py" in names
    assert not [n for n in names if n.endswith((".so", ".pyc"))]
    assert not [n for n in names if n.startswith(("allreduce_doctor/tui/", "allreduce_doctor/export/"))]
    assert package_zip() == package_zip.__wrapped__()  # the same code gives the same bytes


def test_the_remote_command_keeps_the_nodes_packages_out():
    assert remote_command("python3") == "python3 -I -S -"


def run_remote(env: dict, interval: float = 0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", "-S", "-"], input=remote_script(interval), capture_output=True,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}, timeout=120)


def test_the_script_answers_with_a_bundle_that_replays_exactly(tmp_path):
    proc = run_remote({REPLAY_ENV: str(GID5)})
    assert proc.returncode == 0, proc.stdout[-500:] + proc.stderr[-500:]
    (tmp_path / "n.tar.gz").write_bytes(decode_frame(proc.stdout.splitlines()))
    got = Session(Doctor.load(), SnapshotHost(tmp_path / "n.tar.gz"), Options(interval=0)).diagnose().to_dict()
    want = Session(Doctor.load(), SnapshotHost(GID5), Options(interval=0)).diagnose().to_dict()
    assert (got["root_cause"], got["path"]) == (want["root_cause"], want["path"])


def test_a_node_that_cannot_collect_says_why_in_one_line():
    proc = run_remote({REPLAY_ENV: "/nonexistent/bundle.tar.gz"})
    assert proc.returncode == 2
    assert proc.stdout == (b"ALLREDUCE-DOCTOR-ERROR /nonexistent/bundle.tar.gz: no such file or directory; "
                           b"give the path of a bundle directory or .tar.gz\n")
    with pytest.raises(ValueError, match="^/nonexistent/bundle.tar.gz: no such file or directory"):
        decode_frame(proc.stdout.splitlines())


def test_frames_round_trip_and_banners_before_them_are_ignored():
    data = os.urandom(50000)
    lines = [b"Welcome to gpu01 (printed by .bashrc)"] + frame(data).encode().splitlines()
    assert decode_frame(lines) == data


@pytest.mark.parametrize("lines, message", [
    ([b"Last login: yesterday", b"garbage"], "returned no bundle (its output began: 'Last login: yesterday')"),
    ([], "returned no output"),
    ([b"ALLREDUCE-DOCTOR-BUNDLE 4 abc", b"AAAA"], "returned a truncated bundle (no end marker)"),
    ([b"ALLREDUCE-DOCTOR-BUNDLE x"], "returned a damaged bundle header"),
    ([b"ALLREDUCE-DOCTOR-BUNDLE 3 00", b"!!!!", b"ALLREDUCE-DOCTOR-END"], "returned a damaged bundle (not base64)"),
    ([b"ALLREDUCE-DOCTOR-BUNDLE 3 00", b"AAAA", b"ALLREDUCE-DOCTOR-END"], "returned a damaged bundle (size or checksum differs)"),
])
def test_garbage_is_named(lines, message):
    with pytest.raises(ValueError) as err:
        decode_frame(lines)
    assert str(err.value) == message


@pytest.mark.parametrize("rc, problem, stderr, reason", [
    (255, "returned no output", ["ssh: connect to host gpu9 port 22: Connection refused\n"],
     "ssh failed: ssh: connect to host gpu9 port 22: Connection refused"),
    (255, "returned no output", [], "ssh failed: no message"),
    (127, "returned no output", ["bash: line 1: python3: command not found\n"],
     "python3 not found on the node (see --remote-python): bash: line 1: python3: command not found"),
    (3, "python3 on this node is 3.9; allreduce-doctor needs 3.11 or newer (point --remote-python at one)", [],
     "python3 on this node is 3.9; allreduce-doctor needs 3.11 or newer (point --remote-python at one) (exit 3)"),
    (1, "returned no bundle (its output began: 'x')", ["Traceback: boom\n"],
     "returned no bundle (its output began: 'x') (exit 1); stderr: Traceback: boom"),
])
def test_failure_reasons(rc, problem, stderr, reason):
    assert failure_reason(rc, problem, stderr) == reason


def test_processes_are_found_without_psutil():
    """The node runs under -S: NodeHost lists the job's processes from /proc through LiveHost."""
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                           env={"NCCL_IB_GID_INDEX": "3", "PATH": "/usr/bin:/bin", "API_TOKEN": "secret"})
    try:
        found = {p.pid: p for p in NodeHost()._scan_proc()}
    finally:
        job.kill()
        job.wait()
    assert found[job.pid].env == {"NCCL_IB_GID_INDEX": "3"}
    assert found[job.pid].maps_nccl is False
    assert os.getpid() not in found
