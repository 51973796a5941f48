"""Non-root (issue 15, item 4): what permissions hide is "missing: needs root", never healthy or
an error, and the Diagnosis says the verdict is partial."""

from __future__ import annotations

import json
import tarfile
import zlib
from pathlib import Path

from allreduce_doctor.cli import main
from allreduce_doctor.doctor import load_catalogue
from allreduce_doctor.hosts.base import CommandResult, HostIdentity
from allreduce_doctor.probes.builtins import nccl_processes
from allreduce_doctor.probes.execute import run_instance
from tests.snapshot.snapshot_helpers import FakeHost

SCENARIOS = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"
LSPCI_AS_USER = (
    "19:00.0 Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n"
    "\tSubsystem: Mellanox Technologies Device 0070\n"
    "\tCapabilities: <access denied>\n"
)


def user_host(**kw) -> FakeHost:
    return FakeHost(ident=HostIdentity("gpu-node-07", "6.8.0", 1001, False), **kw)


def test_a_user_who_sees_no_job_has_not_seen_the_others():
    obs = nccl_processes(user_host())
    assert (obs.status, obs.value) == ("missing", [])
    assert obs.reason == "no NCCL job among this user's processes; other users' processes: needs root"


def test_root_who_sees_no_job_knows_there_is_none():
    obs = nccl_processes(FakeHost(ident=HostIdentity("gpu-node-07", "6.8.0", 0, True)))
    assert (obs.status, obs.value, obs.reason) == ("ok", [], "")


def test_dmesg_under_dmesg_restrict_needs_root():
    spec = load_catalogue().probes["dmesg"]
    host = user_host(whiches={"dmesg": "/usr/bin/dmesg"}, commands={(0, "dmesg/all"): CommandResult(
        ["dmesg"], 1, stderr="dmesg: read kernel buffer failed: Operation not permitted\n")})
    out = run_instance(spec, host, {})
    assert (out.status, out.reason) == (
        "missing", "needs root (exit status 1: dmesg: read kernel buffer failed: Operation not permitted)")


def test_lspci_capabilities_denied_on_every_device_need_root():
    spec = load_catalogue().probes["lspci"]
    host = user_host(whiches={"lspci": "/usr/bin/lspci"},
                     commands={(0, "lspci/all"): CommandResult(["lspci", "-vvv"], 0, stdout=LSPCI_AS_USER)})
    out = run_instance(spec, host, {})
    assert (out.status, out.reason) == ("missing", "needs root: lspci shows <access denied> for every device's capabilities")
    assert out.value[0]["access_denied"] is True


def test_another_users_job_is_partial_not_healthy(tmp_path, capsys):
    """Root sees the job's NCCL_IB_DISABLE=1; uid 1001 sees no job: inconclusive, and partial."""
    root = tmp_path / "b"
    root.mkdir()
    with tarfile.open(SCENARIOS / "ib-disabled-env" / "bundle.tar.gz") as tar:
        tar.extractall(root, filter="data")
    manifest, index = (json.loads((root / n).read_text()) for n in ("manifest.json", "index.json"))
    manifest["host"].update(euid=1001, is_root=False)
    index["processes"] = []  # what a user who does not own the job sees
    (root / "index.json").write_text(json.dumps(index))
    manifest["index_crc32"] = zlib.crc32((root / "index.json").read_bytes())  # edited on purpose, not damaged
    (root / "manifest.json").write_text(json.dumps(manifest))
    assert main(["diagnose", "--snapshot", str(root)]) == 3
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:4] == ["INCONCLUSIVE",
                          "  PARTIAL: not seen without root: nccl.env, nccl.processes; run as root for the whole check"]
    assert main(["diagnose", "--snapshot", str(root), "--format", "json"]) == 3
    assert json.loads(capsys.readouterr().out)["context"]["needs_root"] == ["nccl.env", "nccl.processes"]
