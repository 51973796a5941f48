"""Pasted tool output decides like the node it came from (issue 11: one knowledge base).

Each scenario bundle's recorded command outputs are pasted as an engineer pastes them (each block
headed by its `$ argv` line) and diagnosed as evidence only. Where those outputs show the
bundle's cause, the paste must give the bundle's own cause, through the same trunk/IB/RoCE
checks; where they cannot (the cause lives in sysfs files, counters over time or the job's
environment), the paste must never name another fault and never call the node healthy.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
import yaml

from allreduce_doctor.cli import main

SCENARIOS = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"
# The scenarios whose cause the command outputs alone show (ibstat, ibv_devinfo -v, lspci -vvv,
# mlnx_qos, nvidia-smi), and the runbook step that must decide it: a node check, not a log rule
# (pasted lspci -vvv is the node's pci.lspci: trunk.acs judges it; nccl_log.yaml holds no twin of it).
SHOWN_BY_OUTPUTS = {
    "roce-pfc-off": "roce.pfc",
    "ib-link-degraded": "trunk.link_rate",
    "multi-degraded-symbol-errors": "trunk.link_rate",
    "ib-acs-redirect": "trunk.acs",
    "acs-directtrans-no-ats": "trunk.acs",
    "ib-port-down": "trunk.ports_active",
    "ib-no-sm": "trunk.ports_init",
    "ib-mtu-2048": "ib.mtu",
    "roce-mtu-1500": "roce.mtu",
    "ib-pcie-x8": "trunk.pcie_nic",
    "nvlink-inactive": "trunk.nvlink",
    "fabric-manager-not-ready": "trunk.fabric_manager",
    "numa-remote-nics": "trunk.numa",
}


def paste_of(bundle: Path) -> str:
    """The first sample of every recorded command, as `$ argv` followed by its output."""
    blocks = []
    with tarfile.open(bundle) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.isfile() and member.name.startswith("commands/") and member.name.endswith(".json"):
                record = json.load(tar.extractfile(member))
                if record.get("stdout") and record.get("argv"):
                    blocks.append("$ " + " ".join(record["argv"]) + "\n" + record["stdout"])
    return "\n".join(blocks)


def diagnose_paste(tmp_path: Path, capsys, text: str, answers: dict | None = None) -> tuple[int, dict]:
    path = tmp_path / "paste.txt"
    path.write_text(text)
    given = [arg for name, value in (answers or {}).items() for arg in ("--answer", f"{name}={value}")]
    code = main(["diagnose", "--evidence", str(path), "--format", "json", *given])
    return code, json.loads(capsys.readouterr().out)


def _scenarios() -> list[str]:
    return sorted(p.name for p in SCENARIOS.iterdir() if (p / "bundle.tar.gz").is_file())


@pytest.mark.parametrize("name", _scenarios())
def test_pasted_outputs_decide_like_the_bundle(name, tmp_path, capsys):
    expected = yaml.safe_load((SCENARIOS / name / "expected.yaml").read_text())
    # the scenario's answers (a declared fabric policy among them) hold for its paste too
    code, data = diagnose_paste(tmp_path, capsys, paste_of(SCENARIOS / name / "bundle.tar.gz"), expected.get("answers"))
    found = (data["root_cause"] or {}).get("id")
    if name in SHOWN_BY_OUTPUTS:
        assert (found, data["verdict"], code) == (expected["cause"], "fault", 1), [
            (p["node"], p["outcome"]) for p in data["path"] if p["outcome"] != "no"]
        deciding = [p for p in data["path"] if p["node"] == SHOWN_BY_OUTPUTS[name]]
        assert deciding and deciding[0]["outcome"] == "yes"
    else:
        assert found in (None, expected["cause"]), found  # never another fault
        assert data["verdict"] != "healthy" and code != 0  # a paste is never a healthy node


@pytest.mark.parametrize("name", ["ib-acs-redirect", "acs-directtrans-no-ats"])
def test_pasted_lspci_is_judged_by_the_nodes_own_acs_rule(name, tmp_path, capsys):
    """One ACS rule (pci.acs): the paste's deciding ports are the bundle's, port for port."""
    from tests.scenarios.expected import diagnose

    node = next(p for p in diagnose(name)["path"] if p["node"] == "trunk.acs")
    _, data = diagnose_paste(tmp_path, capsys, paste_of(SCENARIOS / name / "bundle.tar.gz"))
    pasted = next(p for p in data["path"] if p["node"] == "trunk.acs")
    assert pasted["value"] == node["value"] and len(node["value"]) == 8
    assert {p["acs"] for p in node["value"]} == {"ReqRedir+ CmpltRedir+ DirectTrans" + ("+" if "directtrans" in name else "-")}


def test_pasted_lspci_with_directtrans_and_ats_is_healthy_on_acs(tmp_path, capsys):
    _, data = diagnose_paste(tmp_path, capsys, paste_of(SCENARIOS / "acs-directtrans-ats" / "bundle.tar.gz"))
    step = next(p for p in data["path"] if p["node"] == "trunk.acs")
    assert step["outcome"] == "no" and (data["root_cause"] or {}).get("id") != "pcie_acs_enabled"


def test_every_listed_scenario_exists():
    assert set(SHOWN_BY_OUTPUTS) <= set(_scenarios())


def test_interface_from_the_command_line_names_the_qos_record(tmp_path, capsys):
    """mlnx_qos output pasted under its `$ mlnx_qos -i IF` line is that netdev's net.qos_mlnx."""
    from tests.evidence.helpers import facts

    text = paste_of(SCENARIOS / "roce-pfc-off" / "bundle.tar.gz")
    qos = facts(tmp_path, text)["net.qos_mlnx"]
    off = [r["name"] for r in qos if not r["pfc_enabled"]]
    assert off == ["enp155s0np0"] and len(qos) == 8


def _ibstat(dev_states: list[tuple[str, str, str]]) -> str:
    return "".join(f"CA '{dev}'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.41.1000\n\tPort 1:\n"
                   f"\t\tState: {state}\n\t\tPhysical state: {phys}\n\t\tRate: 400\n\t\tBase lid: 17\n\t\tSM lid: 1\n"
                   "\t\tLink layer: InfiniBand\n" for dev, state, phys in dev_states)


HEALTHY_TABLE = _ibstat([("mlx5_0", "Active", "LinkUp"), ("mlx5_1", "Active", "LinkUp")])
DOWN_TABLE = _ibstat([("mlx5_0", "Active", "LinkUp"), ("mlx5_1", "Down", "Polling")])


def test_two_hosts_tables_never_mix_and_the_report_names_the_other(tmp_path):
    """Outputs under `root@gpu01:~# ibstat` and `[admin@gpu02 ~]$ ibstat` are two nodes' tables: the
    node facts are the first host's, whole; the other host is named, not merged in."""
    text = f"root@gpu01:~# ibstat\n{HEALTHY_TABLE}\n[admin@gpu02 ~]$ ibstat\n{DOWN_TABLE}"
    from tests.evidence.helpers import load_text

    result = load_text(tmp_path, text)
    ports = next(o.value for o in result.observations if o.fact == "rdma.ports")
    assert [(p["name"], p["state"]["name"]) for p in ports] == [("mlx5_0/1", "ACTIVE"), ("mlx5_1/1", "ACTIVE")]
    assert (result.report["node_facts_host"], result.report["hosts_not_read"]) == ("gpu01", ["gpu02"])
    assert [t.get("host") for t in result.report["tool_outputs"]] == ["gpu01", "gpu02"]
    # the same tables in the other order (named by ssh): gpu02's down port is the node's
    result = load_text(tmp_path, f"$ ssh gpu02 ibstat\n{DOWN_TABLE}\n$ ssh gpu01 ibstat\n{HEALTHY_TABLE}")
    ports = next(o.value for o in result.observations if o.fact == "rdma.ports")
    assert [(p["name"], p["state"]["name"]) for p in ports] == [("mlx5_0/1", "ACTIVE"), ("mlx5_1/1", "DOWN")]
    assert result.report["node_facts_host"] == "gpu02"
    # one host's port table and another host's QoS are not one node: gpu02's mlnx_qos stays out
    qos = (SCENARIOS / "roce-pfc-off").joinpath("bundle.tar.gz")
    mlnx = next(b for b in paste_of(qos).split("$ ") if b.startswith("mlnx_qos -i enp155s0np0"))
    mlnx = mlnx.split("\n", 1)[1]
    result = load_text(tmp_path, f"root@gpu01:~# ibstat\n{HEALTHY_TABLE}\nroot@gpu02:~# mlnx_qos -i enp155s0np0\n{mlnx}")
    assert "net.qos_mlnx" not in {o.fact for o in result.observations}
