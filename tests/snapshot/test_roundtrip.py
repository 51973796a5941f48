"""Record a FakeHost through RecordingHost, replay with SnapshotHost: the same answers, exactly."""

from __future__ import annotations

import dataclasses
import re
import tarfile
import zlib

import pytest

from allreduce_doctor.hosts.base import CommandResult, FileResult, GlobNotRecorded, Host, HostIdentity, ProcessInfo
from allreduce_doctor.hosts.recording import RecordingHost
from allreduce_doctor.hosts.snapshot import SnapshotHost
from tests.snapshot.snapshot_helpers import FakeHost

PORT = "/sys/class/infiniband/mlx5_0/ports/1"


def make_fake() -> FakeHost:
    sample0 = {
        f"{PORT}/state": FileResult(f"{PORT}/state", "ok", text="4: ACTIVE\n"),
        f"{PORT}/rate": FileResult(f"{PORT}/rate", "ok", text="400 Gb/sec (4X NDR)\n"),
        f"{PORT}/counters/port_xmit_data": FileResult(f"{PORT}/counters/port_xmit_data", "ok", text="1000\n"),
        f"{PORT}/gid_attrs/types/3": FileResult(f"{PORT}/gid_attrs/types/3", "error", reason="EINVAL: Invalid argument"),
        "/proc/cmdline": FileResult("/proc/cmdline", "ok", text="BOOT_IMAGE=/vmlinuz iommu=pt ünïcode"),
        "/sys/kernel/debug/x": FileResult("/sys/kernel/debug/x", "denied", reason="permission denied (needs root)"),
        "/etc/empty": FileResult("/etc/empty", "ok", text=""),
        "~/.nccl.conf": FileResult("/root/.nccl.conf", "ok", text="NCCL_IB_HCA=mlx5\n"),
        "/sys/../etc/hostname": FileResult("/sys/../etc/hostname", "ok", text="gpu-node-07\n"),
        "relative/file": FileResult("relative/file", "ok", text="rel"),
        "/sys/a": FileResult("/sys/a", "ok", text="a file"),
        "/sys/a/b": FileResult("/sys/a/b", "ok", text="under a file"),  # a clash only a fake can make
    }
    sample1 = {
        f"{PORT}/counters/port_xmit_data": FileResult(f"{PORT}/counters/port_xmit_data", "ok", text="5000\n"),
        f"{PORT}/state": FileResult(f"{PORT}/state", "ok", text="1: DOWN\n"),
    }
    commands = {
        (0, "ibstat/all"): CommandResult(["ibstat"], 0, stdout="CA 'mlx5_0'\n", duration=0.0123),
        (0, "ethtool_stats/eth2"): CommandResult(["ethtool", "-S", "eth2"], None, stdout="part", duration=5.002,
                                                 timed_out=True),
        (0, "show gids/mlx5 0!"): CommandResult(["show_gids"], 1, stderr="boom\n", duration=0.5),
        (0, ""): CommandResult(["/usr/bin/lspci", "-vvv"], 0, stdout="00:00.0 Host bridge", duration=0.2),
        (1, "ethtool_stats/eth2"): CommandResult(["ethtool", "-S", "eth2"], 0, stdout="rx_pause: 7\n", duration=0.04),
    }
    return FakeHost(
        files={0: sample0, 1: sample1},
        globs={0: {"/sys/class/infiniband/*": ["/sys/class/infiniband/mlx5_0", "/sys/class/infiniband/mlx5_1"]},
               1: {"/sys/class/net/*": ["/sys/class/net/eth2"]}},
        links={"/sys/class/net/eth2/device": "/sys/devices/pci0000:00/0000:00:02.0"},
        whiches={"ibstat": "/usr/sbin/ibstat"},
        commands=commands,
        procs=[ProcessInfo(4242, "python", ["python", "train.py"], {"NCCL_DEBUG": "INFO"}, True, True),
               ProcessInfo(4243, "torchrun", [], {}, False, False)],
    )


def as_plain(value):
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    if isinstance(value, list):
        return [as_plain(v) for v in value]
    return value


def drive(host: Host) -> list:
    """A probe run in miniature: two samples, every kind of call, each answer kept."""
    answers = [("identity", as_plain(host.identity())), ("sample", host.sample, host.sample_time())]
    paths = list(make_fake().files[0]) + ["/never/read"]
    for path in paths:
        answers.append(("read", path, as_plain(host.read(path))))
    for key, argv in [("ibstat/all", ["ibstat"]), ("ethtool_stats/eth2", ["ethtool", "-S", "eth2"]),
                      ("show gids/mlx5 0!", ["show_gids"]), ("", ["/usr/bin/lspci", "-vvv"]),
                      ("ibv_devinfo/all", ["ibv_devinfo", "-v"])]:
        answers.append(("run", key, as_plain(host.run(argv, 5.0, key))))
    answers.append(("glob", as_plain(host.glob("/sys/class/infiniband/*"))))
    answers.append(("readlink", host.readlink("/sys/class/net/eth2/device"), host.readlink("/sys/class/net/lo")))
    answers.append(("which", host.which("ibstat"), host.which("mlnx_qos")))
    answers.append(("processes", as_plain(host.processes())))
    host.next_sample(2.5)
    answers.append(("sample", host.sample, host.sample_time()))
    for path in [f"{PORT}/counters/port_xmit_data", f"{PORT}/state", "/proc/cmdline"]:
        answers.append(("read", path, as_plain(host.read(path))))
    answers.append(("run", as_plain(host.run(["ethtool", "-S", "eth2"], 5.0, "ethtool_stats/eth2"))))
    answers.append(("run", as_plain(host.run(["ibstat"], 5.0, "ibstat/all"))))
    answers.append(("glob", as_plain(host.glob("/sys/class/net/*")), as_plain(host.glob("/sys/class/infiniband/*"))))
    return answers


@pytest.mark.parametrize("name", ["bundle", "bundle.tar.gz", "bundle.tgz"])
def test_replay_gives_the_recorded_answers(tmp_path, name):
    recorder = RecordingHost(make_fake(), tmp_path / name)
    recorded = drive(recorder)
    assert recorded == drive(make_fake())
    out = recorder.finish("roce", "cafe01", {"job": "llm-512"})
    assert out == tmp_path / name
    replayed = drive(SnapshotHost(out))
    assert replayed == recorded


def test_failures_and_absences_replay_as_recorded(tmp_path):
    recorder = RecordingHost(make_fake(), tmp_path / "b.tar.gz")
    drive(recorder)
    host = SnapshotHost(recorder.finish("ib", "h", {}))
    assert host.read(f"{PORT}/gid_attrs/types/3") == FileResult(
        f"{PORT}/gid_attrs/types/3", "error", reason="EINVAL: Invalid argument")
    assert host.read("/never/read") == FileResult("/never/read", "missing", reason="no such file")
    # the recorder writes every read: one it holds neither as a member nor as a failure is unknown,
    # never "no such file" (a member taken out with its listing would read as absent hardware)
    assert host.read("/not/asked") == FileResult("/not/asked", "error", reason="not captured in the bundle")
    assert host.run(["nvidia-smi", "topo", "-m"], 5, "nvidia_smi/topo") == CommandResult(
        ["nvidia-smi", "topo", "-m"], None, error="not captured in the bundle")
    assert host.run(["ethtool", "-S", "eth2"], 5, "ethtool_stats/eth2").timed_out is True
    assert host.run(["ibv_devinfo", "-v"], 5, "ibv_devinfo/all").error == "not found"
    with pytest.raises(GlobNotRecorded, match=r"^/sys/class/net/\*: not recorded in this bundle \(index.json lists no such glob\)$"):
        host.glob("/sys/class/net/*")  # never globbed: unknown, where [] would say "no such hardware"
    assert host.readlink("/nowhere") is None and host.which("mlnx_qos") is None  # looked up: absent
    assert not host.never_looked_up("mlnx_qos")
    assert host.which("nowhere") is None and host.never_looked_up("nowhere")  # not "not installed"


def test_next_sample_steps_without_sleeping_and_past_the_last_nothing_is_captured(tmp_path):
    recorder = RecordingHost(make_fake(), tmp_path / "b")
    recorder.glob("/sys/class/infiniband/*")
    recorder.next_sample(2.5)
    recorder.read(f"{PORT}/counters/port_xmit_data")
    host = SnapshotHost(recorder.finish("none", "", {}))
    assert (host.sample, host.sample_time()) == (0, 1000.25)
    host.next_sample(3600)
    assert (host.sample, host.sample_time()) == (1, 1002.75)
    assert host.read(f"{PORT}/counters/port_xmit_data").ok
    host.next_sample(3600)  # the same sample twice would give zero rates: "no growth"
    assert host.sample_time() == 1002.75 + 3600
    assert host.read(f"{PORT}/counters/port_xmit_data") == FileResult(
        f"{PORT}/counters/port_xmit_data", "missing", reason="not captured in the bundle (past its last sample)")
    assert host.glob("/sys/class/infiniband/*") == ["/sys/class/infiniband/mlx5_0", "/sys/class/infiniband/mlx5_1"]
    assert host.run(["ethtool", "-S", "eth2"], 5, "ethtool_stats/eth2").error == "not captured in the bundle"


def _index_bytes(archive) -> bytes:
    with tarfile.open(archive) as tar:
        return tar.extractfile("index.json").read()


def test_manifest_holds_what_finish_was_given(tmp_path):
    recorder = RecordingHost(make_fake(), tmp_path / "b.tar.gz")
    recorder.glob("/sys/class/infiniband/*")
    recorder.read("/proc/cmdline")
    recorder.next_sample(1.5)
    host = SnapshotHost(recorder.finish("mixed", "deadbeef", {"argv": ["allreduce-doctor", "capture"]}))
    m = host.manifest
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", m.pop("created"))
    assert m == {
        "format": "allreduce-doctor-bundle",
        "format_version": 1,
        "tool_version": "0.1.0",
        "host": {"hostname": "gpu-node-07", "kernel": "5.15.0-91-generic", "euid": 1000, "is_root": False},
        "fabric": "mixed",
        "probe_catalogue_hash": "deadbeef",
        "interval": 1.5,
        "samples": [{"index": 0, "time": 1000.25}, {"index": 1, "time": 1001.75}],
        "extra": {"argv": ["allreduce-doctor", "capture"]},
        "index_crc32": zlib.crc32(_index_bytes(tmp_path / "b.tar.gz")),
    }
    assert host.identity() == HostIdentity("gpu-node-07", "5.15.0-91-generic", 1000, False)
    assert host.kind == "snapshot" and recorder.kind == "recording"
    assert isinstance(host, Host) and isinstance(recorder, Host)


def test_processes_never_asked_replay_as_empty(tmp_path):
    recorder = RecordingHost(make_fake(), tmp_path / "b")
    recorder.glob("/sys/class/infiniband/*")
    host = SnapshotHost(recorder.finish("ib", "", {}))
    assert host.processes() == []


def test_a_later_answer_for_the_same_path_wins(tmp_path):
    fake = make_fake()
    recorder = RecordingHost(fake, tmp_path / "b")
    recorder.glob("/sys/class/infiniband/*")
    path = f"{PORT}/state"
    recorder.read(path)
    fake.files[0][path] = FileResult(path, "denied", reason="permission denied (needs root)")
    recorder.read(path)
    fake.files[0]["/x"] = FileResult("/x", "error", reason="EIO")
    recorder.read("/x")
    fake.files[0]["/x"] = FileResult("/x", "ok", text="fine now")
    recorder.read("/x")
    host = SnapshotHost(recorder.finish("ib", "", {}))
    assert host.read(path) == FileResult(path, "denied", reason="permission denied (needs root)")
    assert host.read("/x") == FileResult("/x", "ok", text="fine now")


def test_bundle_layout_follows_the_format(tmp_path):
    recorder = RecordingHost(make_fake(), tmp_path / "b")
    drive(recorder)
    out = recorder.finish("roce", "", {})
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert "files/proc/cmdline" in names
    assert f"samples/1/files{PORT}/counters/port_xmit_data" in names
    assert "commands/ibstat/all.json" in names
    assert "commands/show_gids/mlx5_0_.json" in names
    assert "commands/_usr_bin_lspci_-vvv.json" in names
    assert "samples/1/commands/ethtool_stats/eth2.json" in names
    assert {"manifest.json", "index.json"} <= set(names)
    assert (out / "files/proc/cmdline").read_bytes() == "BOOT_IMAGE=/vmlinuz iommu=pt ünïcode".encode()
