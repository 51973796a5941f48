"""Fleet verdicts that cannot contradict themselves: comparisons stay within a fabric, an empty set
is inconclusive, duplicate hostnames are a warning."""

from __future__ import annotations

import json

from allreduce_doctor.cli import main
from allreduce_doctor.fleet.compare import compare_settings
from tests.fleet.conftest import lay_out


def fleet_json(capsys, folder) -> tuple[int, dict]:
    code = main(["fleet", "--snapshots", str(folder), "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_an_ib_node_among_roce_nodes_is_a_fabric_mismatch_not_an_mtu_fix(tmp_path, capsys):
    folder = lay_out(tmp_path, {"r1": "roce-healthy", "r2": "roce-healthy", "r3": "roce-healthy", "i1": "ib-healthy"})
    code, data = fleet_json(capsys, folder)
    odd = {s["key"]: s["odd"] for s in data["fleet"]["settings"] if s["odd"]}
    assert code == 1 and odd == {"fabric": {"i1": "ib"}}
    steps = [r["step"] for r in data["remediation"]]
    assert steps[0] == "Bring i1 to the fleet's fabric: roce."
    assert not any("MTU" in s or "NCCL_IB_HCA" in s for s in steps)


def test_settings_are_compared_within_each_fabric():
    records = {
        "r1": {"settings": {"fabric": "roce"}, "ports": {"netdev_mtu": {"p0": 9000}}},
        "r2": {"settings": {"fabric": "roce"}, "ports": {"netdev_mtu": {"p0": 1500}}},
        "r3": {"settings": {"fabric": "roce"}, "ports": {"netdev_mtu": {"p0": 9000}}},
        "i1": {"settings": {"fabric": "ib"}, "ports": {"netdev_mtu": {"p0": 4092}}},
    }
    entries = {e["key"]: e for e in compare_settings(records)}
    assert entries["fabric"]["odd"] == {"i1": "ib"}
    assert entries["netdev_mtu[roce]"]["odd"] == {"r2": {"p0": 1500}}
    assert entries["netdev_mtu[ib]"]["odd"] == {} and entries["netdev_mtu[ib]"]["nodes"] == 1


def test_an_empty_folder_is_inconclusive_not_ok(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "broken.tar.gz").write_bytes(b"not a bundle")
    code, data = fleet_json(capsys, tmp_path / "empty")
    assert code == 3 and data["verdict"] == "inconclusive"
    nodes = [s for s in data["path"] if s["node"] == "fleet.nodes"]
    assert [(s["outcome"], s["means"]) for s in nodes] == [("unknown", "no node could be diagnosed")]


def test_duplicate_hostnames_are_a_warning(tmp_path, capsys):
    folder = lay_out(tmp_path, {"a": "roce-healthy", "b": "roce-healthy"})
    code, data = fleet_json(capsys, folder)
    assert data["warnings"] == ["host gpu-node-017 is in 2 bundles (a, b): the same node collected twice, "
                                "or nodes sharing a hostname; its settings count more than once"]


def test_a_fleet_without_gpus_or_rdma_is_not_applicable(tmp_path, capsys):
    from tests.scenarios import nodes as N
    from tests.scenarios.build import record

    folder = tmp_path / "cpu"
    folder.mkdir()
    for name in ("c1", "c2"):
        record(N.Node(ports=0, gpus=0, hostname=name), folder / f"{name}.tar.gz")
    code, data = fleet_json(capsys, folder)
    assert (code, data["verdict"]) == (4, "not_applicable")
