"""A port that is not ACTIVE: a candidate when the text does not show the rails, decided by the walk
when NCCL names it as a rail, down rather than trained low; `rdma link show` read and judged."""

from __future__ import annotations

import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse
from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import facts
from tests.evidence.helpers import ranked as _ranked


# -- a port that is not ACTIVE, when the text does not say which ports are the rails ----------------
def _ibstat_ca(name: str, state: str, phys: str, rate: int) -> str:
    # infiniband-diags ibstat, one CA with one RoCE port (the tabs pasted as spaces).
    return (f"CA '{name}'\n\tCA type: MT4125\n\tNumber of ports: 1\n\tFirmware version: 22.38.1002\n"
            "\tHardware version: 0\n\tNode GUID: 0x1c34da0300a1b2c4\n\tSystem image GUID: 0x1c34da0300a1b2c4\n"
            f"\tPort 1:\n\t\tState: {state}\n\t\tPhysical state: {phys}\n\t\tRate: {rate}\n\t\tBase lid: 0\n"
            "\t\tLMC: 0\n\t\tSM lid: 0\n\t\tCapability mask: 0x00010000\n\t\tPort GUID: 0x1e34dafffea1b2c4\n"
            "\t\tLink layer: Ethernet\n")


IBSTAT_ONE_DOWN = ("$ ibstat\n" + _ibstat_ca("mlx5_0", "Active", "LinkUp", 100)
                   + _ibstat_ca("mlx5_1", "Down", "Disabled", 40) + _ibstat_ca("mlx5_2", "Active", "LinkUp", 100))


def test_a_down_port_of_the_rails_model_is_a_candidate_when_the_rails_are_not_shown(tmp_path):
    rc, d, path = _diagnose(tmp_path, IBSTAT_ONE_DOWN, "--symptom", "hang")
    assert rc == 3 and d["verdict"] == "inconclusive" and d["healthy"] is None
    step = next(p for p in d["path"] if p["node"] == "trunk.ports_active")
    assert step["outcome"] == "unknown"  # the walk cannot tell a storage port from a rail
    first = d["findings"][0]
    assert (first["cause"], first["confidence"]) == ("ib_port_down", "low")
    assert first["supporting"] == [f"{path}:2-52: mlx5_1/1 DOWN (Disabled), beside ACTIVE ports of the same model"]
    assert first["next_step"] == ("paste NCCL's `NET/IB : Using` line or the job's NCCL_IB_HCA: a down port among "
                                  "them is a lost rail")


def test_every_port_active_gives_no_down_port_candidate(tmp_path):
    _, d, _ = _diagnose(tmp_path, IBSTAT_ONE_DOWN.replace("State: Down", "State: Active")
                        .replace("Physical state: Disabled", "Physical state: LinkUp"))
    assert "ib_port_down" not in _ranked(d)


def test_a_down_port_that_nccl_names_as_a_rail_is_decided_by_the_walk(tmp_path):
    using = "gpu-node-1:4242:4301 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE ; OOB eth0:10.0.0.1<0>\n"
    rc, d, _ = _diagnose(tmp_path, using + IBSTAT_ONE_DOWN)
    assert d["root_cause"]["id"] == "ib_port_down" and d["root_cause"]["confidence"] == "high"


IBSTATUS_ONE_DOWN = (  # infiniband-diags ibstatus: an NDR port up, one down (a down port reports 10 Gb/s SDR)
    "Infiniband device 'mlx5_0' port 1 status:\n\tdefault gid:\t fe80:0000:0000:0000:a088:c203:0012:3456\n"
    "\tbase lid:\t 0xc\n\tsm lid:\t\t 0x1\n\tstate:\t\t 4: ACTIVE\n\tphys state:\t 5: LinkUp\n"
    "\trate:\t\t 400 Gb/sec (4X NDR)\n\tlink_layer:\t InfiniBand\n\n"
    "Infiniband device 'mlx5_1' port 1 status:\n\tdefault gid:\t fe80:0000:0000:0000:a088:c203:0012:3457\n"
    "\tbase lid:\t 0xffff\n\tsm lid:\t\t 0x0\n\tstate:\t\t 1: DOWN\n\tphys state:\t 3: Disabled\n"
    "\trate:\t\t 10 Gb/sec (4X SDR)\n\tlink_layer:\t InfiniBand\n")


def test_a_down_ib_port_is_down_not_a_link_trained_low(tmp_path):
    _, d, path = _diagnose(tmp_path, IBSTATUS_ONE_DOWN)
    assert _ranked(d) == ["ib_port_down"]  # its SDR rate is what a port that is down reports, not a training
    assert d["findings"][0]["supporting"] == [f"{path}:1-17: mlx5_1/1 DOWN (Disabled), beside ACTIVE ports of the same model"]


# -- iproute2 `rdma link show`: the ports' state as the kernel's netlink gives it -------------------
RDMA_LINK = ("$ rdma link show\n"
             "link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 12 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP "
             "netdev ibp12s0\n"
             "link mlx5_1/1 subnet_prefix fe80:0000:0000:0000 lid 65535 sm_lid 0 lmc 0 state DOWN physical_state "
             "DISABLED netdev ibp13s0\n"
             "link mlx5_2/1 state ACTIVE physical_state LINK_UP netdev ens1f0np0\n")


def test_the_rdma_link_parser_reads_state_link_layer_and_netdev():
    ports = parse("rdma_link", RDMA_LINK)["ports"]
    assert ports["mlx5_0/1"] == {"state": "ACTIVE", "physical_state": "LINK_UP", "link_layer": "InfiniBand", "lid": 12,
                                 "sm_lid": 1, "netdev": "ibp12s0"}
    assert ports["mlx5_2/1"]["link_layer"] == "Ethernet" and ports["mlx5_2/1"]["lid"] is None  # no LID: not IB
    old = parse("rdma_link", "0/1: mlx5_0/1: state DOWN physical_state POLLING netdev ens2f0\n")["ports"]
    assert old == {"mlx5_0/1": {"state": "DOWN", "physical_state": "POLLING", "link_layer": "Ethernet", "lid": None,
                                "sm_lid": None, "netdev": "ens2f0"}}
    with pytest.raises(ParseError, match=r"^expected `rdma link show` lines"):
        parse("rdma_link", "link show\n")


def test_a_down_port_in_rdma_link_show_is_the_down_port_candidate(tmp_path):
    _, d, path = _diagnose(tmp_path, RDMA_LINK)
    assert _ranked(d) == ["ib_port_down"]
    assert d["findings"][0]["supporting"] == [f"{path}:2-4: mlx5_1/1 DOWN (Disabled), beside ACTIVE ports of the same model"]
    ports = facts(tmp_path, RDMA_LINK)["rdma.ports"]
    assert [(p["name"], p["link_layer"], p["state"]["name"], p["phys_state"]["name"], p["netdev"]) for p in ports] == [
        ("mlx5_0/1", "InfiniBand", "ACTIVE", "LinkUp", "ibp12s0"), ("mlx5_1/1", "InfiniBand", "DOWN", "Disabled", "ibp13s0"),
        ("mlx5_2/1", "Ethernet", "ACTIVE", "LinkUp", "ens1f0np0")]
