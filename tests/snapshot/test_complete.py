"""A bundle the current writer records is complete or refused (issue 15): index.json lists every
member with its CRC-32 and manifest.json the index's, so a member deleted, emptied, cut or
changed, an edited index or a dropped sample is refused in one line (exit 2), never healthy;
a member added later is not part of the recording and changes nothing."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.snapshot import open_bundle
from tests.scenarios.build import SCENARIOS, record

DAMAGED = "the bundle is damaged, collect it again"
COUNTER = "files/sys/class/infiniband/mlx5_3/ports/1/hw_counters/out_of_buffer"
COMMAND = "commands/ibstat/all.json"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """roce-healthy recorded now, by the current writer, unpacked once."""
    work = tmp_path_factory.mktemp("recorded")
    record(SCENARIOS["roce-healthy"], work / "b.tar.gz")
    root = work / "orig"
    root.mkdir()
    with tarfile.open(work / "b.tar.gz") as tar:
        tar.extractall(root, filter="data")
    return root


@pytest.fixture()
def bundle(recorded, tmp_path) -> Path:
    copy = tmp_path / "b"
    shutil.copytree(recorded, copy)
    return copy


def diagnose(capsys, path: Path) -> tuple[int, str, str]:
    code = main(["diagnose", "--snapshot", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def refused(path: Path, problem: str) -> tuple[int, str, str]:
    return 2, "", f"allreduce-doctor: error: {path}: {problem}; {DAMAGED}\n"


def test_the_index_lists_every_member_with_its_checksum(recorded, capsys):
    index = json.loads((recorded / "index.json").read_text())
    on_disk = sorted(str(p.relative_to(recorded)) for p in recorded.rglob("*") if p.is_file())
    assert sorted(index["members"]) == [n for n in on_disk if n not in ("index.json", "manifest.json")]
    assert COUNTER in index["members"] and COMMAND in index["members"]
    assert diagnose(capsys, recorded)[0] == 0  # whole: nothing found


@pytest.mark.parametrize("name", [COUNTER, COMMAND, "samples/1/" + COUNTER])
def test_a_deleted_member_is_refused(bundle, capsys, name):
    (bundle / name).unlink()
    assert diagnose(capsys, bundle) == refused(bundle, f"member '{name}' listed in index.json is not in the bundle")


CHANGES = {
    "emptied": lambda data: b"",
    "cut": lambda data: data[:-1],
    "junk": lambda data: b"\x00\xffjunk",
    "one digit changed": lambda data: data.replace(b"0", b"9", 1) if b"0" in data else data + b"9",
}


@pytest.mark.parametrize("change", CHANGES)
@pytest.mark.parametrize("name", [COUNTER, COMMAND])
def test_a_changed_member_is_refused(bundle, capsys, name, change):
    path = bundle / name
    path.write_bytes(CHANGES[change](path.read_bytes()))
    problem = f"member '{name}' does not match its checksum in index.json (changed or cut)"
    assert diagnose(capsys, bundle) == refused(bundle, problem)


def _drop_a_glob(doc: dict) -> None:
    doc["globs"]["0"].pop("/sys/class/infiniband/mlx5_3/ports/1/hw_counters/*")


def _forget_a_member(doc: dict) -> None:
    doc["members"].pop(COUNTER)


@pytest.mark.parametrize("edit", [_drop_a_glob, _forget_a_member], ids=["drop a glob", "forget a member"])
def test_an_edited_index_is_refused(bundle, capsys, edit):
    doc = json.loads((bundle / "index.json").read_text())
    edit(doc)
    (bundle / "index.json").write_text(json.dumps(doc))
    assert diagnose(capsys, bundle) == refused(bundle, "index.json does not match the checksum in manifest.json (changed or cut)")


def test_a_sample_dropped_from_the_manifest_is_refused(bundle, capsys):
    doc = json.loads((bundle / "manifest.json").read_text())
    doc["samples"] = doc["samples"][:1]
    (bundle / "manifest.json").write_text(json.dumps(doc))
    first = min(n for n in json.loads((bundle / "index.json").read_text())["members"] if n.startswith("samples/1/"))
    assert diagnose(capsys, bundle) == refused(bundle, f"index.json lists '{first}' of a sample manifest.json does not list")


def test_members_added_later_change_nothing(recorded, bundle, capsys):
    """/etc/nccl.conf was absent when recorded: a copy planted in the bundle is not read."""
    whole = diagnose(capsys, recorded)[1].replace(str(recorded), str(bundle))
    (bundle / "files" / "etc").mkdir()
    (bundle / "files" / "etc" / "nccl.conf").write_text("NCCL_IB_DISABLE=1\n")
    (bundle / "files" / "sys" / "class" / "infiniband" / "mlx5_3" / "ports" / "1" / "hw_counters" / "planted_counter").write_text("99999\n")
    code, out, err = diagnose(capsys, bundle)
    assert (code, out, err) == (0, whole, "")
    opened = open_bundle(bundle)  # what the index does not list is not read, whoever asks
    assert opened.member("files/etc/nccl.conf") is None
    assert opened.member(COUNTER) == (bundle / COUNTER).read_bytes()


def test_an_archive_missing_a_member_is_refused(recorded, tmp_path, capsys):
    archive = tmp_path / "b.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for path in sorted(recorded.rglob("*")):
            name = str(path.relative_to(recorded))
            if path.is_file() and name != COMMAND:
                tar.addfile(_info(name, path), io.BytesIO(path.read_bytes()))
    assert diagnose(capsys, archive) == refused(archive, f"member '{COMMAND}' listed in index.json is not in the bundle")


def _info(name: str, path: Path) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = path.stat().st_size
    return info
