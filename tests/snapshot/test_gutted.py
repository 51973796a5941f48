"""A bundle is complete or refused: a gutted bundle is damaged (exit 2, one line) or its checks
are unknown (inconclusive, exit 3), never "nothing found" (issue 15, item 3). A bundle of the
older format, which lists no members and their checksums, is refused whole (issue 32, item 1):
a member lost from it would read as a file the node did not have."""

from __future__ import annotations

import json
import shutil
import tarfile
import zlib
from pathlib import Path

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.snapshot.writer import check_output

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# roce-healthy as the older writer recorded it (before index.json listed its members), kept apart
# from the scenario bundles, which are recorded again when a probe is added
OLDER_BUNDLE = FIXTURES / "older" / "roce-healthy" / "bundle.tar.gz"
CURRENT_BUNDLE = FIXTURES / "scenarios" / "roce-healthy" / "bundle.tar.gz"
DAMAGED = "the bundle is damaged, collect it again"
OLDER = ("{what} (an older allreduce-doctor wrote it), so none of its members can be vouched for: a lost one "
         "would read as a file the node did not have; collect the snapshot again with this version")
NO_INDEX_CRC = OLDER.format(what="manifest.json holds no index_crc32")
NO_MEMBERS = OLDER.format(what="index.json lists no members and their checksums")


def unpack(tmp_path: Path, name: str, archive: Path = OLDER_BUNDLE) -> Path:
    root = tmp_path / name
    root.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    return root


def reseal(root: Path, index: dict) -> None:
    """Write an edited index.json and its checksum into manifest.json, as a forger would."""
    data = json.dumps(index).encode()
    (root / "index.json").write_bytes(data)
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["index_crc32"] = zlib.crc32(data)
    (root / "manifest.json").write_text(json.dumps(manifest))


def as_stored(root: Path) -> None:
    pass


def no_index(root: Path) -> None:
    (root / "index.json").unlink()


def only_manifest(root: Path) -> None:
    for child in root.iterdir():
        if child.name != "manifest.json":
            shutil.rmtree(child) if child.is_dir() else child.unlink()


def empty_index(root: Path) -> None:
    (root / "index.json").write_text("{}")


def no_files(root: Path) -> None:
    shutil.rmtree(root / "files")


def no_commands(root: Path) -> None:
    shutil.rmtree(root / "commands")


def no_second_sample(root: Path) -> None:
    shutil.rmtree(root / "samples")


def one_sample_listed(root: Path) -> None:
    doc = json.loads((root / "manifest.json").read_text())
    doc["samples"] = doc["samples"][:1]
    (root / "manifest.json").write_text(json.dumps(doc))


GUTS = [  # (gut, the refusal): what the older bundle cannot vouch for is never read
    (as_stored, NO_INDEX_CRC),
    (no_index, "no index.json; " + DAMAGED),
    (only_manifest, "no index.json; " + DAMAGED),
    (empty_index, NO_INDEX_CRC),
    (no_files, NO_INDEX_CRC),
    (no_commands, NO_INDEX_CRC),
    (no_second_sample, NO_INDEX_CRC),
    (one_sample_listed, NO_INDEX_CRC),
]


def diagnose(capsys, root: Path) -> tuple[int, str, str]:
    code = main(["diagnose", "--snapshot", str(root)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("gut", "problem"), GUTS, ids=[g.__name__ for g, _ in GUTS])
def test_an_older_bundle_whole_or_gutted_is_refused_in_one_line(tmp_path, capsys, gut, problem):
    root = unpack(tmp_path, "b")
    gut(root)
    assert diagnose(capsys, root) == (2, "", f"allreduce-doctor: error: {root}: {problem}\n")


def test_an_older_archive_is_refused_in_one_line(capsys):
    assert diagnose(capsys, OLDER_BUNDLE) == (2, "", f"allreduce-doctor: error: {OLDER_BUNDLE}: {NO_INDEX_CRC}\n")


def test_an_older_index_given_a_checksum_is_still_refused(tmp_path, capsys):
    """index_crc32 added to an older bundle vouches for index.json, not for the members it never listed."""
    root = unpack(tmp_path, "b")
    reseal(root, json.loads((root / "index.json").read_text()))
    assert diagnose(capsys, root) == (2, "", f"allreduce-doctor: error: {root}: {NO_MEMBERS}\n")


def test_collecting_again_replaces_an_older_bundle(tmp_path):
    root = unpack(tmp_path, "b")
    check_output(root, archive=False)  # no refusal: the older bundle is a bundle, just not read
    check_output(OLDER_BUNDLE, archive=True)


def test_a_fleet_of_gutted_bundles_is_not_healthy(tmp_path, capsys):
    folder = tmp_path / "fleet"
    folder.mkdir()
    for i in range(20):
        gut = [no_index, only_manifest, empty_index, as_stored][i % 4]
        gut(unpack(folder, f"n{i:02d}"))
    code = main(["fleet", "--snapshots", str(folder), "--format", "json"])
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert (code, data["verdict"]) == (3, "inconclusive")
    assert data["fleet"]["per_node"] == {}
    assert len(data["fleet"]["nodes_unreachable"]) == 20


NOT_RECORDED = "not recorded in this bundle (index.json lists no such glob)"
# A current bundle's index cannot be edited without a refusal (tests/snapshot/test_complete.py):
# these edit it and write its checksum again, as a forger (or a bundle older than a probe) would.
DROPPED_GLOBS = [  # (scenario, a glob of sample 0 dropped from index.json, the step left unknown)
    ("roce-healthy", "/sys/class/infiniband/*/ports/*", "trunk.rdma_present"),
    ("roce-healthy", "/sys/class/infiniband/mlx5_3/ports/1/hw_counters/*", "roce.loss"),
    # an ECN enable that cannot be read is unknown, not "off on every priority" (ecn_disabled)
    ("roce-healthy", "/sys/class/net/enp60s0np0/ecn/roce_np/enable/*", "roce.ecn"),
    # a GID table that was not read is unknown, not "no routable GID at NCCL's index" (wrong_gid_index)
    ("roce-healthy", "/sys/class/infiniband/mlx5_0/ports/1/gids/*", "roce.gid_index"),
    ("roce-healthy", "/sys/class/infiniband/mlx5_3/ports/1/gid_attrs/types/*", "roce.gid_index"),
]
UNDECIDED = "the observed values could not decide it (a value it needs is null or absent)"


@pytest.mark.parametrize(("scenario", "pattern", "step"), DROPPED_GLOBS)
def test_a_glob_dropped_from_the_index_is_unknown_not_absent_hardware(tmp_path, capsys, scenario, pattern, step):
    root = unpack(tmp_path, "b", FIXTURES / "scenarios" / scenario / "bundle.tar.gz")
    index = json.loads((root / "index.json").read_text())
    del index["globs"]["0"][pattern]
    reseal(root, index)
    code = main(["diagnose", "--snapshot", str(root), "--format", "json"])
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert (code, err, data["verdict"]) == (3, "", "inconclusive")
    reasons = {row["node"]: row["reason"] for row in data["inconclusive"]}
    if step == "roce.ecn":
        # the check reads roce.traffic (settings, else the congestion counters), which carries the settings' reason
        assert reasons[step].startswith("roce.traffic: ECN/DCQCN enable not readable on enp60s0np0: ")
    elif step == "roce.gid_index":
        assert reasons[step] == UNDECIDED
    else:
        assert f"{pattern}: {NOT_RECORDED}" in reasons[step]


JUNK = [  # (a member a decision reads, filled with junk and its checksum written again: the parser cannot read it)
    ("files/sys/class/net/enp60s0np0/ecn/roce_rp/enable/3", ["roce.ecn"]),  # was "off": ecn_disabled
    ("files/sys/class/infiniband/mlx5_7/ports/1/gids/3", ["roce.gid_index"]),  # was wrong_gid_index
]


@pytest.mark.parametrize(("member", "steps"), JUNK)
def test_junk_in_a_member_a_decision_reads_is_unknown_not_a_fault(tmp_path, capsys, member, steps):
    root = unpack(tmp_path, "b", CURRENT_BUNDLE)
    (root / member).write_bytes(b"\x01junk\xff")
    index = json.loads((root / "index.json").read_text())
    index["members"][member] = zlib.crc32(b"\x01junk\xff")
    reseal(root, index)
    code = main(["diagnose", "--snapshot", str(root), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert (code, data["verdict"]) == (3, "inconclusive")
    assert set(steps) <= {row["node"] for row in data["inconclusive"]}


def test_a_tool_a_bundle_never_looked_up_is_not_called_uninstalled(tmp_path, capsys):
    """A bundle recorded before a probe existed never looked its tool up (index.json's `which`
    lacks it): the probe's fact is missing, and the reason says the bundle predates the probe,
    where "is not installed" would send the user to install a tool the node may well have."""
    root = unpack(tmp_path, "b", CURRENT_BUNDLE)
    index = json.loads((root / "index.json").read_text())
    del index["which"]["mlnx_qos"]
    reseal(root, index)
    main(["diagnose", "--snapshot", str(root), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    reasons = {row["reason"] for row in data["evidence"] if row["fact"] == "roce.priority"}
    assert reasons == {"net.qos: net.qos_mlnx: mlnx_qos: not looked up when the bundle was recorded (it predates "
                       "this probe); net.pfc_dcb: dcb is not installed (not on PATH)"}  # dcb: looked up, absent
    assert data["verdict"] == "inconclusive"
