"""Reading a bundle trusts nothing: every refusal is one BundleError line, asserted word for word."""

from __future__ import annotations

import json
import os
import tarfile

import pytest

from allreduce_doctor.errors import BundleError
from allreduce_doctor.hosts.base import FILE_ERROR, FileResult, GlobNotRecorded
from allreduce_doctor.hosts.snapshot import SnapshotHost
from allreduce_doctor.snapshot import bundle as bundle_mod
from allreduce_doctor.snapshot.names import NOT_CAPTURED
from tests.snapshot.snapshot_helpers import RECORDED_INDEX, manifest, member, seal_dir, write_tar

DAMAGED = "the bundle is damaged, collect it again"


def refusal(path) -> str:
    with pytest.raises(BundleError) as caught:
        SnapshotHost(path)
    message = str(caught.value)
    assert "\n" not in message
    return message


# --- archives: member names and types ------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "shown"),
    [("../../etc/passwd", "../../etc/passwd"), ("/etc/passwd", "/etc/passwd"),
     ("files/../../x", "files/../../x"), ("./files/../../../x", "./files/../../../x")],
)
def test_member_that_escapes_is_refused(tmp_path, name, shown):
    path = tmp_path / "bundle.tar.gz"
    write_tar(path, [member(name, b"root:x:0:0")], manifest())
    assert refusal(path) == f"{path}: member '{shown}' escapes the bundle; refusing to read it"


@pytest.mark.parametrize(
    ("kind", "words"),
    [(tarfile.SYMTYPE, "symbolic link"), (tarfile.LNKTYPE, "hard link"), (tarfile.CHRTYPE, "character device"),
     (tarfile.BLKTYPE, "block device"), (tarfile.FIFOTYPE, "FIFO")],
)
def test_links_devices_and_fifos_are_refused(tmp_path, kind, words):
    path = tmp_path / "bundle.tar.gz"
    write_tar(path, [member("files/etc/passwd", kind=kind, link="/etc/passwd")], manifest())
    assert refusal(path) == f"{path}: member 'files/etc/passwd' is a {words}, not a regular file; refusing to read it"


def test_member_over_the_size_limit_is_refused(tmp_path):
    path = tmp_path / "bundle.tar.gz"
    size = bundle_mod.MAX_MEMBER_BYTES + 1
    write_tar(path, [member("files/proc/huge", bytes(size))], manifest())
    assert refusal(path) == (
        f"{path}: member 'files/proc/huge' is {size} bytes, over the 16 MiB limit for one member; refusing to read it"
    )


def test_total_over_the_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(bundle_mod, "MAX_TOTAL_BYTES", 1 << 20)
    path = tmp_path / "bundle.tar.gz"
    write_tar(path, [member(f"files/sys/f{i}", bytes(300_000)) for i in range(4)], manifest())
    assert refusal(path) == f"{path}: members total over the 1 MiB limit for a bundle; refusing to read it"


def test_duplicate_member_is_refused(tmp_path):
    path = tmp_path / "bundle.tar.gz"
    write_tar(path, [member("files/a", b"1"), member("./files/a", b"2")], manifest())
    assert refusal(path) == f"{path}: member 'files/a' appears twice; {DAMAGED}"


def test_control_characters_in_a_name_stay_on_one_line(tmp_path):
    path = tmp_path / "bundle.tar.gz"
    write_tar(path, [member("../evil\nname", b"")], manifest())
    assert refusal(path) == f"{path}: member '../evil\\nname' escapes the bundle; refusing to read it"


# --- archives: damage ---------------------------------------------------------------------
def test_truncated_archive_is_refused(tmp_path):
    good = tmp_path / "good.tar.gz"
    write_tar(good, [member(f"files/sys/x{i}", os.urandom(2000)) for i in range(10)], manifest())
    SnapshotHost(good)
    cut = tmp_path / "cut.tar.gz"
    data = good.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    assert refusal(cut) == (
        f"{cut}: truncated or corrupt archive (Compressed file ended before the end-of-stream marker was reached); "
        "collect the snapshot again"
    )


def test_not_gzip_is_refused(tmp_path):
    path = tmp_path / "bundle.tar.gz"
    path.write_bytes(b"PK\x03\x04 a zip file")
    assert refusal(path) == f"{path}: truncated or corrupt archive (Not a gzipped file (b'PK')); collect the snapshot again"


def test_gzip_that_is_not_tar_is_refused(tmp_path):
    import gzip

    path = tmp_path / "bundle.tgz"
    path.write_bytes(gzip.compress(b"just some text\n" * 64))
    assert refusal(path) == f"{path}: truncated or corrupt archive (invalid header); collect the snapshot again"


def test_archive_of_the_bundle_folder_itself_is_accepted(tmp_path):
    path = tmp_path / "bundle.tar.gz"
    write_tar(path, [member("snap/manifest.json", json.dumps(manifest()).encode()),
                     member("snap/index.json", json.dumps(RECORDED_INDEX).encode()),
                     member("snap/files/proc/cmdline", b"quiet")])
    assert SnapshotHost(path).read("/proc/cmdline").text == "quiet"


# --- paths and manifests ------------------------------------------------------------------
def test_missing_path_is_refused(tmp_path):
    path = tmp_path / "nope.tar.gz"
    assert refusal(path) == f"{path}: no such file or directory; give the path of a bundle directory or .tar.gz"


def test_file_that_is_neither_folder_nor_archive_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    assert refusal(path) == (
        f"{path}: neither a directory nor a .tar.gz archive; give the path of a bundle directory or .tar.gz"
    )


def test_gzip_without_the_suffix_is_read_as_an_archive(tmp_path):
    path = tmp_path / "snapshot.bin"
    write_tar(path, [], manifest())
    assert SnapshotHost(path).manifest["fabric"] == "roce"


def test_missing_manifest_is_refused(tmp_path):
    path = tmp_path / "bundle.tar.gz"
    write_tar(path, [member("files/proc/cmdline", b"x")])
    assert refusal(path) == f"{path}: no manifest.json; this is not an allreduce-doctor bundle"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (b"{not json", f"manifest.json is not valid JSON (line 1 column 2: Expecting property name enclosed in "
                       f"double quotes); {DAMAGED}"),
        (b"[1, 2]", f"manifest.json is not a JSON object; {DAMAGED}"),
        (json.dumps(manifest(format="sosreport")).encode(),
         "manifest.json format is \"sosreport\", expected 'allreduce-doctor-bundle'; this is not an allreduce-doctor bundle"),
        (json.dumps({"format_version": 1}).encode(),
         "manifest.json format is missing, expected 'allreduce-doctor-bundle'; this is not an allreduce-doctor bundle"),
        (json.dumps(manifest(format_version=2)).encode(),
         "bundle format_version 2 is newer than this tool reads (version 1); upgrade allreduce-doctor to read it"),
        (json.dumps(manifest(format_version="1")).encode(),
         "manifest.json format_version is \"1\", not a version number; this tool reads version 1"),
        (json.dumps(manifest(samples=[{"index": "0"}])).encode(),
         "manifest.json field 'samples' must be a non-empty list of {\"index\": int, \"time\": number}; " + DAMAGED),
        (json.dumps(manifest(host={"euid": "root"})).encode(),
         f"manifest.json host field 'euid' must be an integer or null; {DAMAGED}"),
    ],
)
def test_invalid_manifest_is_refused(tmp_path, text, problem):
    path = tmp_path / "bundle.tar.gz"
    write_tar(path, [member("manifest.json", text)])
    assert refusal(path) == f"{path}: {problem}"


def test_invalid_index_is_refused(tmp_path):
    path = tmp_path / "bundle.tar.gz"
    index = {"reads": {"0": {"/sys/x": {"status": "weird"}}}}
    write_tar(path, [member("index.json", json.dumps(index).encode())], manifest())
    assert refusal(path) == (
        f"{path}: index.json field 'reads' must be an object of sample -> path -> "
        f'{{"status": "missing"|"denied"|"error"|"ok", "reason": string}}; {DAMAGED}'
    )


@pytest.mark.parametrize(
    ("record", "problem"),
    [(b"[]", f"commands/ibstat/all.json is not a JSON object; {DAMAGED}"),
     (b'{"argv": ["ibstat"], "rc": "0"}', f"commands/ibstat/all.json field 'rc' must be an integer or null; {DAMAGED}"),
     (b"nope", f"commands/ibstat/all.json is not valid JSON (line 1 column 1: Expecting value); {DAMAGED}")],
)
def test_invalid_command_record_is_refused_when_asked(tmp_path, record, problem):
    path = tmp_path / "bundle.tar.gz"
    write_tar(path, [member("commands/ibstat/all.json", record)], manifest())
    host = SnapshotHost(path)
    with pytest.raises(BundleError) as caught:
        host.run(["ibstat"], 5, "ibstat/all")
    assert str(caught.value) == f"{path}: {problem}"


# --- directories --------------------------------------------------------------------------
def make_dir_bundle(root):
    (root / "files/proc").mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps(manifest()))
    (root / "index.json").write_text(json.dumps(RECORDED_INDEX))
    (root / "files/proc/cmdline").write_text("quiet")
    seal_dir(root)
    return root


def read_refusal(host, path) -> str:
    with pytest.raises(BundleError) as caught:
        host.read(path)
    return str(caught.value)


def test_directory_symlink_to_etc_passwd_is_refused(tmp_path):
    root = make_dir_bundle(tmp_path / "b")
    (root / "files/etc").mkdir()
    os.symlink("/etc/passwd", root / "files/etc/passwd")
    host = SnapshotHost(root)  # a link the index does not list is not part of the recording: never read
    assert host.read("/proc/cmdline").text == "quiet"
    assert host.read("/etc/passwd") == FileResult("/etc/passwd", FILE_ERROR, reason=NOT_CAPTURED)
    seal_dir(root)  # listed: every listed member is checked when the bundle is opened
    assert refusal(root) == f"{root}: member 'files/etc/passwd' is a symbolic link, not a regular file; refusing to read it"


def test_directory_symlinked_folder_is_refused(tmp_path):
    root = make_dir_bundle(tmp_path / "b")
    os.symlink("/etc", root / "files/etc")
    (root / "index.json").write_text(json.dumps(RECORDED_INDEX))
    (root / "manifest.json").write_text(json.dumps(manifest()))
    seal_dir(root)
    assert refusal(root) == f"{root}: member 'files/etc' is a symbolic link, not a regular file; refusing to read it"


def test_directory_symlinked_manifest_is_refused(tmp_path):
    root = tmp_path / "b"
    root.mkdir()
    (tmp_path / "real.json").write_text(json.dumps(manifest()))
    os.symlink(tmp_path / "real.json", root / "manifest.json")
    assert refusal(root) == f"{root}: member 'manifest.json' is a symbolic link, not a regular file; refusing to read it"


def test_directory_fifo_is_refused(tmp_path):
    root = make_dir_bundle(tmp_path / "b")
    os.mkfifo(root / "files/proc/fifo")
    seal_dir(root)
    assert refusal(root) == f"{root}: member 'files/proc/fifo' is a FIFO, not a regular file; refusing to read it"


def test_directory_member_over_the_size_limit_is_refused(tmp_path):
    root = make_dir_bundle(tmp_path / "b")
    size = bundle_mod.MAX_MEMBER_BYTES + 1
    with open(root / "files/proc/huge", "wb") as fh:
        fh.truncate(size)  # sparse: no disk used
    seal_dir(root)
    assert refusal(root) == (
        f"{root}: member 'files/proc/huge' is {size} bytes, over the 16 MiB limit for one member; refusing to read it"
    )


def test_directory_total_over_the_limit_is_refused(tmp_path):
    root = make_dir_bundle(tmp_path / "b")
    for i in range(2):
        (root / f"files/proc/f{i}").write_bytes(bytes(400_000))
    seal_dir(root)
    host = SnapshotHost(root, 1 << 20)  # every listed member read once when opened: 800,005 bytes
    assert host.read("/proc/f0").text == host.read("/proc/f0").text  # cached: counted once
    (root / "files/proc/f2").write_bytes(bytes(400_000))
    seal_dir(root)
    with pytest.raises(BundleError) as caught:
        SnapshotHost(root, 1 << 20)
    assert str(caught.value) == f"{root}: members total over the 1 MiB limit for a bundle; refusing to read it"


def test_directory_with_a_short_index_answers_from_its_members(tmp_path):
    host = SnapshotHost(make_dir_bundle(tmp_path / "b"))
    assert host.processes() == []
    with pytest.raises(GlobNotRecorded):
        host.glob("/sys/*")
    # A tool the index never looked up is absent, and the bundle says it never looked (not "not installed").
    assert host.which("ibstat") is None and host.never_looked_up("ibstat")
    assert host.read("/proc/cmdline").text == "quiet"
