"""`fleet --snapshots DIR`: bundles already collected, compared through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from allreduce_doctor.cli import main
from allreduce_doctor.fleet.analyze import analyze
from tests.fleet.conftest import FLEET, as_json, bundle, doctor, lay_out

SCENARIOS = yaml.safe_load((Path(__file__).parent / "scenarios.yaml").read_text())


def scenario_bundle(name: str):
    return Path(__file__).parent / name if name.endswith(".tar.gz") else name


@pytest.mark.parametrize("case", SCENARIOS, ids=[c["name"] for c in SCENARIOS])
def test_fleet_scenarios(tmp_path, case):
    folder = lay_out(tmp_path, {node: scenario_bundle(b) for node, b in case["nodes"].items()})
    data = as_json(doctor("fleet", "--snapshots", str(folder), "--format", "json"))
    assert (data["root_cause"] or data["healthy"])["id"] == case["cause"]
    assert data["fleet"]["nodes_affected"] == case["affected"]


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["fleet", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_snapshots_name_the_odd_nodes(tmp_path):
    folder = lay_out(tmp_path / "incident", FLEET)
    proc = doctor("fleet", "--snapshots", str(folder), "--format", "json")
    assert proc.returncode == 1
    data = as_json(proc)
    assert data["root_cause"] == {
        "id": "setting_mismatch", "title": "a setting differs on a minority of nodes", "severity": "critical",
        "owner": "network", "node": "fleet.settings",
        "summary": "2 settings differ between the nodes: pfc_priorities differs on gpu01; nccl_env.NCCL_IB_GID_INDEX "
                   "differs on gpu02. One node with a different setting is enough to make every collective of the job "
                   "lossy or slow."}
    assert data["evidence"][:2] == [
        {"node": "fleet.settings", "fact": "pfc_priorities", "observed": {"gpu01": {"enp155s0np0": []}},
         "expected": "[3] (on 3 of 4 nodes)", "source": "fleet comparison of 4 nodes", "status": "ok", "reason": ""},
        {"node": "fleet.settings", "fact": "nccl_env.NCCL_IB_GID_INDEX", "observed": {"gpu02": "5"},
         "expected": "3 (on 3 of 4 nodes)", "source": "fleet comparison of 4 nodes", "status": "ok", "reason": ""},
    ]
    assert data["remediation"][:2] == [
        {"step": "Bring gpu01 to the fleet's PFC-enabled priorities: [3].", "owner": "network"},
        {"step": "Bring gpu02 to the fleet's NCCL environment of the job: NCCL_IB_GID_INDEX: 3.", "owner": "platform"},
    ]
    assert [(s["node"], s["outcome"]) for s in data["path"]] == [
        ("fleet.collect", "no"), ("fleet.pause", "no"), ("fleet.loss", "no"), ("fleet.settings", "yes"),
        ("fleet.outliers", "no"), ("fleet.nodes", "yes")]
    assert data["context"]["host"] == "gpu[01-04]"
    assert data["context"]["source"] == f"fleet of 4 nodes, bundles in {folder}"
    assert data["fleet"]["nodes_unreachable"] == {}


def test_every_compared_setting_is_listed(tmp_path):
    data = as_json(doctor("fleet", "--snapshots", str(lay_out(tmp_path, FLEET)), "--format", "json"))
    assert [s["key"] for s in data["fleet"]["settings"]] == [
        "fabric", "pfc_priorities", "trust", "dscp_map", "ecn_np_priorities", "ecn_rp_priorities", "netdev_mtu",
        "active_mtu", "link_rate", "port_state", "roce_v2_ipv4_gid_index", "nccl_env.NCCL_DEBUG",
        "nccl_env.NCCL_IB_GID_INDEX", "nccl_env.NCCL_IB_TC", "nccl_env.NCCL_SOCKET_IFNAME", "iommu", "acs_redirect",
        "peermem", "nic_pcie", "firmware", "kernel"]
    dscp = next(s for s in data["fleet"]["settings"] if s["key"] == "dscp_map")
    assert dscp["majority"] == "0-7:0 8-15:1 16-23:2 24-31:3 32-39:4 40-47:5 48-55:6 56-63:7"


def test_a_healthy_fleet(tmp_path, capsys):
    folder = lay_out(tmp_path, {f"n{i}": "roce-healthy" for i in range(1, 4)})
    code, out, err = run_cli(capsys, "--snapshots", str(folder), "--format", "json")
    data = json.loads(out)
    assert (code, err) == (0, "")
    assert data["verdict"] == "healthy"
    assert data["healthy"]["summary"] == "Each of the 3 nodes is healthy on its own and their settings agree."
    assert data["findings"] == []
    code, out, _ = run_cli(capsys, "--snapshots", str(folder))
    # the three copies of one bundle carry one hostname: said at the top
    assert out.splitlines()[1] == ("warning: host gpu-node-017 is in 3 bundles (n1, n2, n3): the same node collected "
                                   "twice, or nodes sharing a hostname; its settings count more than once")
    assert out.splitlines()[3] == "NOTHING FOUND ON ANY NODE: no_fault_found"


def test_a_pause_cascade_is_seen_only_across_nodes(tmp_path, capsys):
    folder = lay_out(tmp_path, {"a1": "roce-pause-storm", "a2": "roce-pause-storm", "a3": "roce-pause-storm",
                                "a4": "roce-healthy"})
    code, out, _ = run_cli(capsys, "--snapshots", str(folder), "--format", "json")
    data = json.loads(out)
    assert code == 1
    assert data["root_cause"]["id"] == "pfc_pause_storm"
    assert data["root_cause"]["summary"] == ("PFC pause takes over 15% of the window on 3 of 4 RoCE nodes and no node "
                                             "loses packets: a pause cascade. The nodes that spent the most time sending "
                                             "pause: a1, a2, a3.")
    assert data["fleet"]["patterns"][0]["nodes"] == ["a1", "a2", "a3"]


def test_loss_on_one_node_is_local(tmp_path, capsys):
    folder = lay_out(tmp_path, {"b1": "roce-healthy", "b2": "roce-packet-loss", "b3": "roce-healthy", "b4": "roce-healthy"})
    code, out, _ = run_cli(capsys, "--snapshots", str(folder), "--format", "json")
    data = json.loads(out)
    loss = next(p for p in data["fleet"]["patterns"] if p["cause"] == "roce_packet_loss")
    assert loss == {"cause": "roce_packet_loss", "scope": "local", "nodes": ["b2"], "ports": {"b2": ["enp77s0np0"]},
                    "summary": "Packets are lost on 1 of 4 RoCE nodes, a few nodes only: the fault is local to "
                               "their ports or their switch ports."}
    # the lossy node is also an outlier: a straggler
    assert [(o["node"], o["metric"]) for o in data["fleet"]["outliers"]] == [("b2", "loss_rate")]
    assert [f["cause"] for f in data["findings"]] == ["roce_packet_loss", "straggler_node"]


def test_a_slow_link_makes_a_straggler(tmp_path, capsys):
    folder = lay_out(tmp_path, {"c1": "ib-healthy", "c2": "ib-healthy", "c3": "ib-link-degraded", "c4": "ib-healthy"})
    code, out, _ = run_cli(capsys, "--snapshots", str(folder), "--format", "json")
    data = json.loads(out)
    assert data["fleet"]["outliers"] == [{
        "metric": "link_rate_gbps", "title": "slowest port's link rate (Gb/s)", "node": "c3", "value": 200.0,
        "median": 400.0, "mad": 0.0, "direction": "low"}]
    assert data["findings"][0]["cause"] == "setting_mismatch"  # the link rate differs too
    assert "straggler_node" in [f["cause"] for f in data["findings"]]


def test_a_damaged_bundle_is_reported_and_the_rest_stand(tmp_path, capsys):
    folder = lay_out(tmp_path, {"d1": "roce-healthy", "d2": "roce-healthy"})
    (folder / "d3.tar.gz").write_bytes(b"not a bundle")
    (folder / "notes.txt").write_text("ignored")
    code, out, _ = run_cli(capsys, "--snapshots", str(folder), "--format", "json")
    data = json.loads(out)
    assert code == 3
    assert data["verdict"] == "inconclusive"
    assert data["fleet"]["nodes_unreachable"] == {
        "d3": f"unreadable bundle: {folder / 'd3.tar.gz'}: truncated or corrupt archive (Not a gzipped file (b'no')); "
              "collect the snapshot again"}
    assert list(data["fleet"]["per_node"]) == ["d1", "d2"]


@pytest.mark.parametrize("args, message", [
    (["--snapshots", "/nonexistent/fleet"], "--snapshots /nonexistent/fleet: no such directory"),
    (["--nodes", "gpu[01-", "--interval", "0.5"], "--nodes 'gpu[01-': missing bracket: \"gpu[01-\""),
    (["--nodes", "gpu1", "--interval", "0"], "--interval 0: expected 0.1 to 600 seconds"),  # live nodes, as collect
    (["--nodes", "gpu1", "--fanout", "0"], "--fanout 0: expected 1 to 10000 nodes"),
    (["--nodes", "gpu1", "--timeout", "0"], "--timeout 0: expected 1 to 3600 seconds"),
    (["--nodes", "gpu1", "--remote-python", "python3; rm -rf /"], "--remote-python 'python3; rm -rf /': expected a command name or path"),
    (["--slurm-job", "12; ls"], "--slurm-job '12; ls': expected a job id such as 123456 (or 123456_7 for an array task)"),
    (["--nodes", "gpu1", "--answer", "oops"], "--answer 'oops': expected NAME=VALUE, e.g. --answer validated_scale=two_nodes"),
])
def test_bad_input_is_one_line(capsys, args, message):
    code, out, err = run_cli(capsys, *args)
    assert (code, out, err) == (2, "", f"allreduce-doctor: error: {message}\n")


def test_an_empty_folder_says_how_to_collect(tmp_path, capsys):
    code, _, err = run_cli(capsys, "--snapshots", str(tmp_path))
    assert code == 2
    assert err == (f"allreduce-doctor: error: --snapshots {tmp_path}: no bundles there (NODE.tar.gz files or bundle "
                   "folders); collect them with `srun --ntasks-per-node=1 sh -c 'allreduce-doctor collect -o "
                   "DIR/$(hostname -s).tar.gz'`\n")


def test_per_node_diagnoses_are_written(tmp_path, capsys):
    folder = lay_out(tmp_path / "b", {"e1": "roce-pfc-off", "e2": "roce-healthy"})
    run_cli(capsys, "--snapshots", str(folder), "--per-node", str(tmp_path / "nodes"))
    own = json.loads((tmp_path / "nodes" / "e1.json").read_text())
    assert own["root_cause"]["id"] == "pfc_not_enabled"
    assert own["context"]["bundle"] == str(folder / "e1.tar.gz")
    assert sorted(p.name for p in (tmp_path / "nodes").iterdir()) == ["e1.json", "e2.json"]


def test_forked_workers_give_the_same_results(tmp_path):
    """Past FORK_ABOVE nodes the diagnoses run in forked workers; the results do not change."""
    fleet = {f"f{i:02d}": bundle(["roce-healthy", "roce-pfc-off", "roce-ecn-off"][i % 3]) for i in range(18)}
    serial, digests = analyze(fleet, jobs=1)
    forked, _ = analyze(fleet, jobs=3)
    assert forked == serial
    assert list(forked) == list(fleet)
    assert digests["probe_catalogue"]


def test_markdown_has_the_fleet_tables(tmp_path, capsys):
    folder = lay_out(tmp_path, FLEET)
    _, out, _ = run_cli(capsys, "--snapshots", str(folder), "--format", "markdown")
    assert out.startswith("# setting_mismatch on 2 of 4 nodes (gpu01, gpu02): a setting differs on a minority of nodes\n")
    assert out.split("## Fleet\n", 1)[1] == (
        "\n4 nodes checked, 0 gave no bundle.\n\n"
        "| setting | majority | odd nodes |\n|---|---|---|\n"
        "| pfc_priorities | [3] (3 of 4) | gpu01: enp155s0np0=[] |\n"
        "| nccl_env.NCCL_IB_GID_INDEX | \"3\" (3 of 4) | gpu02: \"5\" |\n\n"
        "| node | verdict | root cause |\n|---|---|---|\n"
        "| gpu01 | fault | pfc_not_enabled |\n| gpu02 | fault | wrong_gid_index |\n"
        "| gpu03 | healthy |  |\n| gpu04 | healthy |  |\n")


def test_the_exporters_take_the_fleet_diagnosis(tmp_path, capsys):
    folder = lay_out(tmp_path, FLEET)
    code, out, err = run_cli(capsys, "--snapshots", str(folder), "--export", "markdown")
    assert (code, err) == (1, "")
    assert out.startswith("# setting_mismatch on 2 of 4 nodes (gpu01, gpu02): a setting differs on a minority of nodes\n")
