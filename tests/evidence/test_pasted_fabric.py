"""The fabric of a paste is that of the ports NCCL uses, as on a node (probes/derive.py node_fabric):
NCCL_IB_HCA's ports, then NCCL's `NET/IB : Using` line, and only then the pasted ports' own layers.
A DGX GB200 tray has 4 ConnectX-7 IB compute ports and BlueField-3 Ethernet ports (DGX GB200 user
guide, Hardware): one IB rail down must not make the paste's fabric RoCE."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json as _diagnose


def _ca(name: str, state: str, phys: str, rate: int, layer: str) -> str:
    # infiniband-diags ibstat, one CA with one port (the tabs pasted as spaces)
    return (f"CA '{name}'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.41.1000\n"
            "\tHardware version: 0\n\tNode GUID: 0x1c34da0300a1b2c4\n\tSystem image GUID: 0x1c34da0300a1b2c4\n"
            f"\tPort 1:\n\t\tState: {state}\n\t\tPhysical state: {phys}\n\t\tRate: {rate}\n\t\tBase lid: 12\n"
            "\t\tLMC: 0\n\t\tSM lid: 1\n\t\tCapability mask: 0x00010000\n\t\tPort GUID: 0x1e34dafffea1b2c4\n"
            f"\t\tLink layer: {layer}\n")


def _tray(down: bool) -> str:
    ib = [_ca(f"mlx5_{i}", "Down" if down and i == 1 else "Active", "Polling" if down and i == 1 else "LinkUp",
              10 if down and i == 1 else 400, "InfiniBand") for i in range(4)]
    eth = [_ca(f"mlx5_{i}", "Active", "LinkUp", 200, "Ethernet") for i in range(4, 8)]
    return "$ env | grep NCCL\nNCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3\n$ ibstat\n" + "".join(ib + eth)


def test_a_down_ib_rail_beside_more_active_ethernet_ports_keeps_the_fabric_infiniband(tmp_path):
    _, d, _ = _diagnose(tmp_path, _tray(down=True))
    assert d["context"]["fabric"] == "ib"
    step = next(p for p in d["path"] if p["node"] == "nccl_log.hca")
    # no IB rail is "used by NCCL but InfiniBand" on a RoCE fabric; the down rail is the node rule's to judge
    assert step["value"] == {"log.job.hca_problems": []}
    assert d["root_cause"]["id"] == "ib_port_down"
    down = next(p for p in d["path"] if p["node"] == "trunk.ports_active")
    assert (down["outcome"], [p["name"] for p in down["value"]]) == ("yes", ["mlx5_1/1"])


def test_the_same_tray_with_every_rail_up_accuses_no_rail(tmp_path):
    _, d, _ = _diagnose(tmp_path, _tray(down=False))
    assert d["root_cause"] is None or d["root_cause"]["id"] not in ("wrong_ib_hca", "ib_port_down")
    assert not {"wrong_ib_hca", "ib_port_down"} & {f["cause"] for f in d["findings"]}
