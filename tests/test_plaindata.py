"""as_plain is dataclasses.asdict without the deep copy: same data, same types, on real diagnoses."""

from collections import namedtuple
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pytest

from allreduce_doctor.doctor import Doctor
from allreduce_doctor.hosts.select import open_host
from allreduce_doctor.plaindata import as_plain
from allreduce_doctor.session import Options, Session

SCENARIOS = Path(__file__).resolve().parent / "fixtures" / "scenarios"
Pair = namedtuple("Pair", "a b")


@dataclass
class Leaf:
    value: object = None


@dataclass
class Tree:
    name: str = "t"
    leaves: list = field(default_factory=list)
    table: dict = field(default_factory=dict)
    pair: tuple = ()


def test_same_as_asdict_on_nested_values():
    tree = Tree("x", [Leaf(1), Leaf([Leaf(2.5), {"k": Leaf(None)}])], {"a": (Leaf(True), "s")}, Pair(Leaf(3), [4]))
    assert as_plain(tree) == asdict(tree)
    assert type(as_plain(tree)["pair"]) is Pair and type(as_plain(tree)["table"]["a"]) is tuple


def test_containers_are_copies_and_odd_leaves_deep_copied():
    inner = {"deep": [1]}
    tree = Tree(leaves=[inner], table={"s": {1, 2}})
    out = as_plain(tree)
    out["leaves"][0]["deep"].append(2)
    out["table"]["s"].add(3)
    assert inner == {"deep": [1]} and tree.table["s"] == {1, 2}


@pytest.mark.parametrize("name", ["ib-healthy", "roce-pfc-off", "dgx-h100-storage-rails"])
def test_a_diagnosis_converts_as_asdict_does(name):
    diagnosis = Session(Doctor.load(), open_host(str(SCENARIOS / name / "bundle.tar.gz")), Options()).diagnose()
    assert repr(as_plain(diagnosis)) == repr(asdict(diagnosis))
