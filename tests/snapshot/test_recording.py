"""RecordingHost output: never overwrites user data, never writes through a link, appears atomically."""

from __future__ import annotations

import json
import os

import pytest

from allreduce_doctor.errors import BundleError
from allreduce_doctor.hosts.base import FileResult
from allreduce_doctor.hosts.recording import RecordingHost
from allreduce_doctor.hosts.snapshot import SnapshotHost
from allreduce_doctor.redact import redact_bytes
from allreduce_doctor.snapshot.names import command_key, command_member, file_member
from allreduce_doctor.snapshot.writer import MemberWriter
from tests.snapshot.snapshot_helpers import FakeHost


def fake() -> FakeHost:
    return FakeHost(files={0: {"/proc/cmdline": FileResult("/proc/cmdline", "ok", text="quiet")}})


def refused_output(out) -> str:
    with pytest.raises(BundleError) as caught:
        RecordingHost(fake(), out)
    return str(caught.value)


def test_non_bundle_folder_is_never_overwritten(tmp_path):
    out = tmp_path / "home"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    assert refused_output(out) == (
        f"{out}: exists and is not an allreduce-doctor bundle; refusing to overwrite it, choose another path"
    )
    assert (out / "thesis.tex").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


@pytest.mark.parametrize("name", ["notes.txt", "backup.tar.gz"])
def test_non_bundle_file_is_never_overwritten(tmp_path, name):
    out = tmp_path / name
    out.write_text("precious")
    assert refused_output(out) == (
        f"{out}: exists and is not an allreduce-doctor bundle; refusing to overwrite it, choose another path"
    )
    assert out.read_text() == "precious"


def test_folder_turned_into_user_data_before_finish_is_kept(tmp_path):
    out = tmp_path / "b"
    recorder = RecordingHost(fake(), out)
    out.mkdir()
    (out / "mine").write_text("precious")
    with pytest.raises(BundleError):
        recorder.finish("ib", "", {})
    assert (out / "mine").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]  # staging removed


@pytest.mark.parametrize("name", ["b", "b.tar.gz"])
def test_an_old_bundle_is_replaced_whole(tmp_path, name):
    out = tmp_path / name
    first = RecordingHost(fake(), out)
    first.glob("/sys/class/net/*")
    first.read("/proc/cmdline")
    first.run(["ibstat"], 5, "ibstat/all")
    first.finish("ib", "", {})
    second = RecordingHost(fake(), out)
    second.glob("/sys/class/net/*")
    second.read("/nothing")
    second.finish("roce", "", {})
    host = SnapshotHost(out)
    assert host.manifest["fabric"] == "roce"
    assert host.read("/proc/cmdline").reason == "not captured in the bundle"
    assert host.run(["ibstat"], 5, "ibstat/all").error == "not captured in the bundle"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_empty_folder_is_used(tmp_path):
    out = tmp_path / "b"
    out.mkdir()
    recorder = RecordingHost(fake(), out)
    recorder.glob("/sys/class/net/*")
    recorder.read("/proc/cmdline")
    assert SnapshotHost(recorder.finish("ib", "", {})).read("/proc/cmdline").text == "quiet"


def test_archive_appears_only_at_finish_and_nothing_is_left_beside_it(tmp_path):
    out = tmp_path / "deep/er/snap.tar.gz"
    recorder = RecordingHost(fake(), out)
    recorder.read("/proc/cmdline")
    assert not out.exists()
    assert recorder.finish("ib", "", {}) == out
    assert sorted(p.name for p in out.parent.iterdir()) == ["snap.tar.gz"]


def test_finish_twice_and_calls_after_finish_are_errors(tmp_path):
    recorder = RecordingHost(fake(), tmp_path / "b")
    recorder.finish("ib", "", {})
    with pytest.raises(RuntimeError):
        recorder.finish("ib", "", {})
    with pytest.raises(RuntimeError):
        recorder.read("/proc/cmdline")


def test_bad_finish_arguments_leave_the_recording_open(tmp_path):
    recorder = RecordingHost(fake(), tmp_path / "b")
    with pytest.raises(ValueError):
        recorder.finish("ethernet", "", {})
    with pytest.raises(TypeError):
        recorder.finish("ib", "", {"not json": object()})
    recorder.glob("/sys/class/net/*")
    recorder.read("/proc/cmdline")
    assert SnapshotHost(recorder.finish("ib", "", {})).read("/proc/cmdline").text == "quiet"


def test_abort_removes_the_partial_bundle(tmp_path):
    recorder = RecordingHost(fake(), tmp_path / "b.tar.gz")
    recorder.read("/proc/cmdline")
    recorder.abort()
    assert list(tmp_path.iterdir()) == []


# --- writing never follows a link ----------------------------------------------------------
def test_writer_refuses_a_symlinked_folder(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    os.symlink(outside, root / "files")
    with pytest.raises(BundleError) as caught:
        MemberWriter(root, "snap").write("files/proc/cmdline", b"x")
    assert str(caught.value) == "snap: files/proc/cmdline meets a symbolic link inside the bundle; refusing to write through it"
    assert list(outside.iterdir()) == []


def test_writer_refuses_a_symlinked_file(tmp_path):
    root, victim = tmp_path / "root", tmp_path / "victim"
    (root / "commands").mkdir(parents=True)
    victim.write_text("precious")
    os.symlink(victim, root / "commands/ibstat.json")
    with pytest.raises(BundleError) as caught:
        MemberWriter(root, "snap").write("commands/ibstat.json", b"{}")
    assert "refusing to write through it" in str(caught.value)
    assert victim.read_text() == "precious"


def test_writer_reports_a_clash_instead_of_writing(tmp_path):
    writer = MemberWriter(tmp_path, "snap")
    assert writer.write("files/sys/a", b"1") is True
    assert writer.write("files/sys/a/b", b"2") is False
    assert (tmp_path / "files/sys/a").read_bytes() == b"1"


# --- names ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("key", "argv", "expected"),
    [("ibstat/all", [], "ibstat/all"), ("ethtool_stats/eth2", [], "ethtool_stats/eth2"),
     ("mlnx_qos/eth 2;rm -rf", [], "mlnx_qos/eth_2_rm_-rf"), ("../../etc/passwd", [], "_/_/etc/passwd"),
     ("/abs//key/", [], "abs/key"), ("", ["/usr/bin/lspci", "-vvv"], "_usr_bin_lspci_-vvv"), ("", [], "_"),
     ("a.json/b", [], "a.json_/b"), ("gid@mlx5_0:1+x", [], "gid@mlx5_0:1+x"), ("ünï", [], "_n_")],
)
def test_command_keys_are_safe_relative_paths(key, argv, expected):
    assert command_key(key, argv) == expected


def test_long_key_segments_are_cut_with_a_hash():
    key = command_key("x" * 300, [])
    assert len(key) == 113 and key.startswith("x" * 100 + "-")
    assert command_key("x" * 300, []) != command_key("x" * 299 + "y", [])


def test_member_names():
    assert file_member("/sys/class/net/eth2/speed", 0) == "files/sys/class/net/eth2/speed"
    assert file_member("/proc/net/dev", 1) == "samples/1/files/proc/net/dev"
    assert command_member("ibstat/all", [], 0) == "commands/ibstat/all.json"
    assert command_member("ibstat/all", [], 2) == "samples/2/commands/ibstat/all.json"
    for unsafe in ["relative", "/sys/../etc", "/sys/./x", "/sys//x", "/sys/x/", "/", "/a\x00b", "/" + "y" * 256]:
        assert file_member(unsafe, 0) is None


def test_index_json_is_plain_json(tmp_path):
    recorder = RecordingHost(fake(), tmp_path / "b")
    recorder.read("/missing")
    recorder.glob("/sys/*")
    out = recorder.finish("ib", "", {})
    index = json.loads((out / "index.json").read_text())
    assert index == {"reads": {"0": {"/missing": {"status": "missing", "reason": "no such file"}}},
                     "globs": {"0": {"/sys/*": []}}, "links": {}, "which": {}, "processes": None, "members": {}}


def test_a_failed_move_is_a_bundle_error_and_leaves_nothing(tmp_path, monkeypatch):
    import allreduce_doctor.hosts.recording as recording_mod

    def fail(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(recording_mod, "pack_archive", fail)
    out = tmp_path / "b.tar.gz"
    recorder = RecordingHost(fake(), out)
    with pytest.raises(BundleError) as caught:
        recorder.finish("ib", "", {})
    assert str(caught.value) == f"{out}: cannot write the bundle (No space left on device); check free space and permissions"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("chunk", [7, 64, 1 << 16])
def test_a_command_record_streamed_in_chunks_is_its_json_with_every_token_redacted(monkeypatch, chunk):
    from allreduce_doctor.hosts import recording
    from allreduce_doctor.hosts.base import CommandResult

    monkeypatch.setattr(recording, "STREAM_CHUNK", chunk)
    token = "ghp_" + "A1b2C3d4" * 5
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----"
    # a token after a space, and one at the end of a long run of token characters ("-" is one)
    # and at a line's start, after a tab and after ESC: in the JSON "\\n", "\\t" and "\\u001b" end in a
    # letter, so no word boundary comes before the token there (main at e59fbb4 let those through)
    stdout = ("port 1 \"quoted\" \\ tab\t é\n" * 3 + f"x {token} y\n" + "-" * 50 + token + "\n"
              + f"{token}\n\t{token}\x1b{token}\n")
    result = CommandResult(["tool"], 0, stdout=stdout, stderr=f"key:\n{pem}\ndone\n", duration=0.5)
    data = b"".join(redact_bytes(c) for c in recording.command_record(result))
    assert json.loads(data) == dict(result.to_dict(), stdout=stdout.replace(token, "<redacted>"),
                                    stderr="key:\n<redacted>\ndone\n")


def test_a_recorded_command_keeps_no_token_that_starts_a_line(tmp_path):
    from allreduce_doctor.hosts.base import CommandResult

    token = "glpat-" + "x1Y2z3W4" * 3
    inner = FakeHost(commands={(0, "tool/all"): CommandResult(["tool"], 0, stdout=f"header\n{token}\n\t{token}\n")})
    recorder = RecordingHost(inner, tmp_path / "b")
    recorder.run(["tool"], 5, "tool/all")
    recorder.finish("none", "", {})
    member = (tmp_path / "b" / "commands/tool/all.json").read_bytes()
    assert token.encode() not in member
    assert json.loads(member)["stdout"] == "header\n<redacted>\n\t<redacted>\n"
