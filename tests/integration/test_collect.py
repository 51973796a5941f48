"""collect: the probe run through RecordingHost; replay is exact; secrets never reach a bundle."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from allreduce_doctor import capture as capture_module
from allreduce_doctor.capture import record
from allreduce_doctor.cli import main
from allreduce_doctor.doctor import load_catalogue
from allreduce_doctor.hosts.live import LiveHost
from allreduce_doctor.hosts.snapshot import SnapshotHost
from allreduce_doctor.probes.runner import ProbeRunner
from tests.scenarios.build import SCENARIOS, fake_host
from tests.scenarios.fakehost import FakeHost

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args, env=None, timeout=60):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "allreduce_doctor", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=ROOT)


def _comparable(observations) -> dict:
    data = observations.to_dict()
    for obs in data.values():
        obs.pop("duration", None)  # the wall time of this run, not an observation of the node
    return data


def test_replaying_a_bundle_yields_the_observations_of_the_live_run(tmp_path):
    for name in ("roce-healthy", "ib-symbol-errors"):
        out = tmp_path / f"{name}.tar.gz"
        path, live = record(fake_host(SCENARIOS[name]), str(out), interval=1.0)
        replayed = ProbeRunner(load_catalogue(), SnapshotHost(path), 1.0).run(None)
        assert _comparable(replayed) == _comparable(live)
        rates = [r for r in replayed.get("rdma.counters").value if r.get("rate")]
        assert rates and rates[0]["interval"] == 1.0


def _collect_on(host, monkeypatch, capsys, out: Path) -> tuple[int, str, float]:
    """`allreduce-doctor collect -o OUT` with `host` as the node (the CLI's own path, in this process)."""
    monkeypatch.setattr(capture_module, "LiveHost", lambda: host)
    start = time.monotonic()
    code = main(["collect", "-o", str(out), "--interval", "0.1"])  # the least a live node allows
    return code, capsys.readouterr().out, time.monotonic() - start


def test_collect_on_a_node_without_rdma_says_so_quickly(tmp_path, monkeypatch, capsys):
    node = FakeHost(files={"/proc/cmdline": "BOOT_IMAGE=/vmlinuz ro\n"})  # no /sys/class/infiniband at all
    code, out, elapsed = _collect_on(node, monkeypatch, capsys, tmp_path / "node.tar.gz")
    assert code == 0 and elapsed < 10, f"collect took {elapsed:.1f} s"
    assert out.splitlines()[1:] == ["no RDMA devices found (/sys/class/infiniband is empty or absent): "
                                    "this node has no InfiniBand or RoCE ports to diagnose",
                                    # the fake node runs the tool as a user: other users' jobs need root
                                    "2 facts need root and were not captured: nccl.env, nccl.processes"]
    assert out.startswith(f"wrote {tmp_path / 'node.tar.gz'}: ")
    with tarfile.open(tmp_path / "node.tar.gz") as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
    assert manifest["format"] == "allreduce-doctor-bundle" and manifest["format_version"] == 1
    assert manifest["fabric"] == "none"


def test_collect_on_a_roce_node_names_its_ports(tmp_path, monkeypatch, capsys):
    code, out, _ = _collect_on(fake_host(SCENARIOS["roce-healthy"]), monkeypatch, capsys, tmp_path / "node.tar.gz")
    assert code == 0 and out.splitlines()[1:] == ["fabric: roce (0 InfiniBand, 8 Ethernet ports)"]


def test_collect_through_the_real_cli_on_this_machine_writes_a_bundle(tmp_path):
    res = _cli("collect", "-o", str(tmp_path / "node.tar.gz"))
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(f"wrote {tmp_path / 'node.tar.gz'}: ")
    with tarfile.open(tmp_path / "node.tar.gz") as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
    assert manifest["format"] == "allreduce-doctor-bundle" and manifest["format_version"] == 1


def test_planted_secrets_never_reach_a_bundle(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".nccl.conf").write_text("NCCL_IB_HCA=mlx5_0\nNCCL_PASSWORD=s3cr3t-Passw0rd\n"
                                     "NCCL_DEBUG_FILE=/tmp/x password=hunter2hunter2\n")
    monkeypatch.setenv("HOME", str(home))
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    # NCCL reads the job's NCCL_CONF_FILE (or its uid's ~/.nccl.conf, never $HOME) through the job's root
    env = {"PATH": os.environ["PATH"], "NCCL_IB_HCA": "mlx5_0", "GITHUB_TOKEN": token,
           "NCCL_CONF_FILE": str(home / ".nccl.conf"),
           "NCCL_COLLNET_URL": f"https://svc:{token}@example.invalid"}
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", f"--token={token}"], env=env)
    try:
        time.sleep(0.3)
        path, observations = record(LiveHost(), str(tmp_path / "b.tar.gz"), interval=0)
    finally:
        proc.kill()
        proc.wait()
    assert observations.get("nccl.conf_user").value["NCCL_IB_HCA"] == "mlx5_0"
    procs = observations.get("nccl.processes").value
    assert any(p["pid"] == proc.pid for p in procs)
    blob = b""
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            if member.isfile():
                blob += tar.extractfile(member).read()
    for secret in (token.encode(), b"s3cr3t-Passw0rd", b"hunter2hunter2"):
        assert secret not in blob
    assert b"<redacted>" in blob


def test_no_eval_exec_or_pickle_in_the_source():
    import ast

    found = []
    for path in (ROOT / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("eval", "exec"):
                found.append(f"{path}:{node.lineno}")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(m.split(".")[0] in ("pickle", "marshal", "shelve") for m in mods):
                    found.append(f"{path}:{node.lineno}")
            if isinstance(node, ast.Attribute) and node.attr in ("load", "unsafe_load") and \
                    isinstance(node.value, ast.Name) and node.value.id == "yaml":
                found.append(f"{path}:{node.lineno} yaml.{node.attr}")
    allowed = {"yamlsrc.py"}  # the one loader, built on SafeLoader
    assert [f for f in found if Path(f.split(":")[0]).name not in allowed] == []
