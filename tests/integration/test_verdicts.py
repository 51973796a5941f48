"""Verdicts that cannot contradict the evidence: no RDMA, no GPUs, a forced fabric both ways.

Each case gives the verdict, the exit code and the words issue 14 asks for.
"""

from __future__ import annotations

import json

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.status import EXIT_FAULT, EXIT_HEALTHY, EXIT_NOT_APPLICABLE
from tests.integration.test_cli import bundle
from tests.scenarios import nodes as N
from tests.scenarios.build import record


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    """Bundles of a GPU node without RDMA hardware, of one whose ConnectX has no RDMA device, and of a
    node with neither GPUs nor RDMA."""
    root = tmp_path_factory.mktemp("verdicts")
    made = {}
    nodes = {"gpus-no-rdma": N.Node(ports=0, bare_nics=(("0x1af4", "virtio-pci"),)),
             "gpus-mlx5-ib-not-loaded": N.Node(ports=0, bare_nics=(("0x15b3", "mlx5_core"),)),
             "no-gpus-no-rdma": N.Node(ports=0, gpus=0)}
    for name, node in nodes.items():
        record(node, root / f"{name}.tar.gz")
        made[name] = str(root / f"{name}.tar.gz")
    return made


def run(capsys, *args) -> tuple[int, str]:
    code = main(["diagnose", "--interval", "0", *args])
    return code, capsys.readouterr().out


def test_gpu_node_whose_nic_has_no_rdma_device_is_socket_fallback(bundles, capsys):
    # a ConnectX function always gets mlx5_core's "rdma" auxiliary device (linux mlx5/core/dev.c):
    # no ib device means mlx5_ib is not loaded, and NCCL falls back to sockets
    code, out = run(capsys, "--snapshot", bundles["gpus-mlx5-ib-not-loaded"])
    assert code == EXIT_FAULT
    assert "FAULT FOUND: socket_fallback (critical, owner: platform)" in out
    assert "  [FAIL] The node has RDMA ports\n" in out
    assert "  [FAIL] Without IB/RoCE ports, NCCL reaches the network through a net plugin (EFA, GPUDirect-TCPX/TCPXO)\n" in out
    assert "  [FAIL] No GPU here is left without RDMA (the node has no NVIDIA GPUs)\n" in out
    assert "every check passed" not in out


def test_gpu_node_built_without_rdma_is_not_applicable_and_says_so(bundles, capsys):
    code, out = run(capsys, "--snapshot", bundles["gpus-no-rdma"])
    assert code == EXIT_NOT_APPLICABLE
    assert out.splitlines()[2] == "NOTHING TO DIAGNOSE HERE"
    assert "This is not a healthy verdict for multi-node jobs." in out
    assert "         -> no NIC here can carry RDMA: the node is built for sockets\n" in out
    assert "socket_fallback" not in out


def test_node_without_gpus_or_rdma_is_not_applicable(bundles, capsys):
    code, out = run(capsys, "--snapshot", bundles["no-gpus-no-rdma"], "--format", "json")
    data = json.loads(out)
    assert code == EXIT_NOT_APPLICABLE == 4
    assert data["verdict"] == "not_applicable" and data["root_cause"] is None
    assert data["healthy"]["title"] == "Nothing to diagnose here"
    assert [(s["node"], s["badge"]) for s in data["path"]] == [
        ("trunk.evidence", "pass"), ("trunk.rdma_present", "n.a."), ("trunk.net_plugin", "n.a."),
        ("trunk.gpus_without_rdma", "n.a.")]


def test_not_applicable_text_says_nothing_to_diagnose(bundles, capsys):
    code, out = run(capsys, "--snapshot", bundles["no-gpus-no-rdma"])
    assert code == EXIT_NOT_APPLICABLE
    assert out.splitlines()[2] == "NOTHING TO DIAGNOSE HERE"
    assert "  [n.a.] The node has RDMA ports\n" in out
    assert "no_fault_found" not in out and "[ ok ]" not in out


@pytest.mark.parametrize("forced", ["ib", "roce"])
def test_forced_fabric_never_creates_ports(bundles, capsys, forced):
    code, out = run(capsys, "--snapshot", bundles["no-gpus-no-rdma"], "--fabric", forced)
    name = {"ib": "InfiniBand", "roce": "RoCE"}[forced]
    assert out.splitlines()[1] == (f"warning: --fabric {forced} ignored: this node has no {name} ports "
                                   "(0 InfiniBand, 0 RoCE); no RDMA branch applies")
    assert code == EXIT_NOT_APPLICABLE and "container_missing_ib_devices" not in out


def test_forced_roce_on_an_ib_node_walks_ib_and_says_so(capsys):
    code, out = run(capsys, "--snapshot", bundle("ib-healthy"), "--fabric", "roce")
    assert out.splitlines()[1] == ("warning: --fabric roce ignored: this node has no RoCE ports "
                                   "(8 InfiniBand, 0 RoCE); walking the InfiniBand branch the ports show")
    assert code == EXIT_HEALTHY and "wrong_ib_hca" not in out


def test_forced_ib_on_a_roce_node_still_finds_pfc_off(capsys):
    code, out = run(capsys, "--snapshot", bundle("roce-pfc-off"), "--fabric", "ib", "--format", "json")
    data = json.loads(out)
    assert code == EXIT_FAULT and data["root_cause"]["id"] == "pfc_not_enabled"
    assert data["warnings"] == ["--fabric ib ignored: this node has no InfiniBand ports (0 InfiniBand, 8 RoCE); "
                                "walking the RoCE branch the ports show"]
    assert data["context"]["fabric"] == "roce"


def test_forced_fabric_that_matches_the_ports_gives_no_warning(capsys):
    code, out = run(capsys, "--snapshot", bundle("roce-pfc-off"), "--fabric", "roce", "--format", "json")
    assert code == EXIT_FAULT and "warnings" not in json.loads(out)


def test_forced_fabric_picks_the_branch_when_the_node_has_both():
    from allreduce_doctor.observations import OK, Observation
    from allreduce_doctor.session import forced_fabric

    both = Observation("node.fabric", {"fabric": "ib", "ib_ports": 2, "eth_ports": 8}, OK)
    obs, warning = forced_fabric("roce", both)
    assert obs.value == {"fabric": "roce", "ib_ports": 2, "eth_ports": 8} and warning == ""


def test_evidence_row_read_status_is_not_a_verdict(capsys):
    code, out = run(capsys, "--snapshot", bundle("roce-pfc-off"))
    assert code == EXIT_FAULT
    assert "      read from derived from rdma.compute_ports (+10 more)\n" in out
    assert "[ok]" not in out


TWO_HOST_LOG = """\
{a}:1234:1234 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
{a}:1234:1234 [0] NCCL INFO NET/IB : No device found.
{a}:1234:1234 [0] NCCL INFO Using network Socket
{b}:2234:2234 [0] NCCL INFO NET/IB : No device found.
{b}:2234:2234 [0] NCCL INFO Using network Socket
"""


def _paste(tmp_path, name: str, a: str, b: str) -> str:
    path = tmp_path / name
    path.write_text(TWO_HOST_LOG.format(a=a, b=b))
    return str(path)


def test_the_hosts_of_a_paste_are_the_diagnosis_nodes(tmp_path, capsys):
    code, out = run(capsys, "--evidence", _paste(tmp_path, "one.log", "gpu-a01", "gpu-b02"), "--format", "json")
    ctx = json.loads(out)["context"]
    assert code == EXIT_FAULT
    assert (ctx["host"], ctx["hosts"]) == ("gpu-a01, gpu-b02", ["gpu-a01", "gpu-b02"])


def test_two_incidents_on_two_hosts_get_two_fingerprints(tmp_path, capsys):
    from allreduce_doctor.export.ticket import build_ticket

    prints = []
    for name, (a, b) in {"one.log": ("gpu-a01", "gpu-b02"), "two.log": ("gpu-c03", "gpu-d04")}.items():
        run(capsys, "--evidence", _paste(tmp_path, name, a, b), "--format", "json", "-o", str(tmp_path / f"{name}.json"))
        prints.append(build_ticket(json.loads((tmp_path / f"{name}.json").read_text())).fingerprint)
    assert prints[0] != prints[1]


TABLE = "nccl-tests-all_reduce_perf-16gpu-2node-h100-gcp.txt"
IBSTAT = "ibstat-ndr-h100-ib-all-active.txt"


def _reference(name: str) -> str:
    """A real tool output kept in the tests (fixtures/outputs, or the evidence suite's real pastes)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for folder in (root / "fixtures" / "outputs", root / "evidence" / "data" / "real"):
        if (folder / name).is_file():
            return (folder / name).read_text()
    raise FileNotFoundError(name)


def test_a_busbw_table_alone_names_its_number_and_is_inconclusive(tmp_path, capsys):
    paste = tmp_path / "table.txt"
    paste.write_text(_reference(TABLE))
    code, out = run(capsys, "--evidence", str(paste))
    assert code == 3
    assert out.splitlines()[2:5] == [
        "INCONCLUSIVE",
        "  No fault found, but 31 checks could not be decided (listed under Inconclusive): missing evidence is not a healthy node.",
        "  Bandwidth: busbw is 338.82 GB/s (peak busbw at large sizes); what the NICs can carry is not known: "
        "paste `ibstat` (or diagnose on the node) to compare"]
    assert "every check passed" not in out


def test_a_busbw_table_with_ibstat_gives_the_ratio(tmp_path, capsys):
    paste = tmp_path / "table.txt"
    paste.write_text(_reference(TABLE) + _reference(IBSTAT))
    code, out = run(capsys, "--evidence", str(paste), "--format", "json")
    bw = json.loads(out)["bandwidth"]
    old = {"measured_gbs": 338.82, "expected_gbs": 400.0, "ratio": 0.847, "verdict": "below", "nics": 8,
           "line_gbps": 400.0, "basis": "peak busbw at large sizes"}
    assert {k: bw[k] for k in old} == old
    assert (bw["hardware"], bw["limit"], bw["ceiling"]["ceiling_gbs"], bw["ceiling"]["nodes"]) == (
        "below", "NICs", 400.0, 2)
    assert bw["hardware_note"].startswith("NICs: 338.82 of about 400 GB/s across 2 nodes (8 NICs per node x 400 Gb/s "
                                          "each (50 GB/s)), 15% below what it should carry; what can hold it back: ")


def test_a_slow_run_without_a_cause_says_so():
    from allreduce_doctor.busbw import phrase

    bw = {"measured_gbs": 16.97, "expected_gbs": 48.0, "ratio": 0.354, "verdict": "below", "nics": 8,
          "line_gbps": 400.0, "basis": "peak busbw at large sizes"}
    assert phrase(bw, found_cause=False) == (
        "busbw is 16.97 GB/s (peak busbw at large sizes), about 35% of what 8x400G can carry (48 GB/s): cause not "
        "found in this evidence; paste NCCL_DEBUG=INFO output of the run and `ibstat` of a node")
    assert phrase(bw, found_cause=True).endswith("(48 GB/s)")


def test_tickets_name_the_not_applicable_verdict_and_the_badges(bundles, capsys, tmp_path):
    from allreduce_doctor.export.ticket import build_ticket

    run(capsys, "--snapshot", bundles["no-gpus-no-rdma"], "--format", "json", "-o", str(tmp_path / "d.json"))
    ticket = build_ticket(json.loads((tmp_path / "d.json").read_text()))
    assert (ticket.cause, ticket.cause_title, ticket.severity) == ("not_applicable", "Nothing to diagnose here", "none")
    assert [s["mark"] for s in ticket.path] == ["pass", "n.a.", "n.a.", "n.a."]


def test_socket_fallback_from_no_device_found_does_not_say_the_log_is_silent(tmp_path, capsys):
    code, out = run(capsys, "--evidence", _paste(tmp_path, "one.log", "gpu-a01", "gpu-b02"))
    assert code == EXIT_FAULT and "FAULT FOUND: socket_fallback" in out
    assert "does not say why" not in out and "`NET/IB : No device found.` in the log" in out
