"""No gutted bundle diagnoses healthy (issue 32, item 1): every member of every healthy shipped
bundle (the scenario bundles whose expected.yaml says healthy, and examples/) taken out, one at a
time, gives a refusal or a verdict other than healthy; so does each removal from the same bundle
rewritten in the older format (no member list, no index checksum), which main at b37f02c read as
a node without that file (HEALTHY in 11 of the 26 older-format removals of the default sample).
The default run takes a seeded sample; the full sweep (2 x 72,499 removals from 63 bundles) is
slow-marked."""

from __future__ import annotations

import json
import os
import random
import tarfile
from pathlib import Path

import pytest
import yaml

from allreduce_doctor.doctor import Doctor
from allreduce_doctor.errors import DoctorError
from allreduce_doctor.hosts.snapshot import SnapshotHost
from allreduce_doctor.session import Options, Session

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests" / "fixtures" / "scenarios"
SAMPLE = (8, 3)  # the default run: members of that many healthy bundles, that many each


def healthy_bundles() -> list[Path]:
    found = [p / "bundle.tar.gz" for p in sorted(SCENARIOS.iterdir())
             if yaml.safe_load((p / "expected.yaml").read_text())["verdict"] == "healthy"]
    return found + [p for p in sorted((ROOT / "examples").glob("*.tar.gz")) if "healthy" in p.name]


BUNDLES = healthy_bundles()


def members(archive: Path) -> list[str]:
    with tarfile.open(archive) as tar:
        return sorted(info.name for info in tar if info.isreg())


def verdict(doctor: Doctor, root: Path) -> str:
    try:
        return Session(doctor, SnapshotHost(root), Options("auto", 0, {}, bundle=str(root))).diagnose().verdict
    except DoctorError as err:
        assert "\n" not in str(err)
        return "refused"


@pytest.fixture(scope="module")
def doctor() -> Doctor:
    return Doctor.load()


class Unpacked:
    """Each bundle unpacked once; a member is taken out for one diagnosis and put back."""

    def __init__(self, work: Path) -> None:
        self.work, self.roots = work, {}

    def root(self, archive: Path) -> Path:
        if archive not in self.roots:
            root = self.work / f"{archive.parent.name}-{archive.name}"
            root.mkdir()
            with tarfile.open(archive) as tar:
                tar.extractall(root, filter="data")
            self.roots[archive] = root
        return self.roots[archive]

    def without(self, doctor: Doctor, archive: Path, name: str, older: bool = False) -> str:
        """The verdict with `name` taken out; `older`: the bundle rewritten as the older writer
        left it (index.json without members, manifest.json without index_crc32)."""
        root = self.root(archive)
        kept = {n: (root / n).read_bytes() for n in ("index.json", "manifest.json")}
        aside = self.work / "aside"
        os.rename(root / name, aside)
        try:
            if older:
                for n, key in (("index.json", "members"), ("manifest.json", "index_crc32")):
                    if (root / n).exists():
                        doc = json.loads(kept[n])
                        doc.pop(key)
                        (root / n).write_text(json.dumps(doc))
            return verdict(doctor, root)
        finally:
            os.rename(aside, root / name)
            for n, data in kept.items():
                (root / n).write_bytes(data)


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> Unpacked:
    return Unpacked(tmp_path_factory.mktemp("gutted"))


def test_there_are_healthy_bundles_and_each_is_healthy_whole(doctor, unpacked):
    assert len(BUNDLES) >= 40
    assert {archive.parent.name: verdict(doctor, unpacked.root(archive)) for archive in BUNDLES[:3]} == {
        archive.parent.name: "healthy" for archive in BUNDLES[:3]}


def _sample() -> list[tuple[Path, str]]:
    rng = random.Random(32)
    bundles, each = SAMPLE
    picked = [(BUNDLES[0], "manifest.json"), (BUNDLES[0], "index.json")]
    for archive in rng.sample(BUNDLES, bundles):
        picked += [(archive, name) for name in rng.sample(members(archive), each)]
    return picked


@pytest.mark.parametrize("older", [False, True], ids=["current", "older"])
@pytest.mark.parametrize(("archive", "name"), _sample(), ids=lambda v: v.parent.name if isinstance(v, Path) else v)
def test_a_bundle_missing_a_member_is_never_healthy(doctor, unpacked, archive, name, older):
    assert verdict(doctor, unpacked.root(archive)) == "healthy"
    assert unpacked.without(doctor, archive, name, older) != "healthy"


@pytest.mark.slow
@pytest.mark.parametrize("older", [False, True], ids=["current", "older"])
@pytest.mark.parametrize("archive", BUNDLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_member_of_a_healthy_bundle_can_go_missing_unnoticed(doctor, unpacked, archive, older):
    healthy = [name for name in members(archive) if unpacked.without(doctor, archive, name, older) == "healthy"]
    assert healthy == []
