"""A pasted port that is not ACTIVE is judged by the node's own rule (trunk.ports_init / ports_active over
rdma.compute_ports, probes/derive.py), as the bundle of the same node is: the paste only turns ibstat's
text into the facts the probe gives. NCCL never chooses a port that is not ACTIVE (ncclIbInit skips it,
src/transport/net_ib.cc v2.21.5-1, net_ib/init.cc v2.30.7-1), so a down port NCCL_IB_HCA selects is a lost
rail (ib_port_down), never a wrong NCCL_IB_HCA."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.evidence.helpers import diagnose_json, step
from tests.scenarios import build as B
from tests.scenarios import tools as T

SCENARIOS = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"


def _paste_of(name: str) -> str:
    """What a user pastes from the scenario's node: the job's NCCL variables, then `ibstat`. ibstat
    prints a state by infiniband-diags' own words (ibstat.c port_state_str: Down, Initializing, Armed,
    Active), where the scenario's tool writes the kernel's INIT as "Init"."""
    node = B.SCENARIOS[name]
    env = {k: v for k, v in {**B.JOB_ENV[node.fabric], **node.env}.items() if v is not None and k.startswith("NCCL_")}
    return ("$ env | grep NCCL\n" + "".join(f"{k}={v}\n" for k, v in env.items())
            + "$ ibstat\n" + T.ibstat(node).replace("\t\tState: Init\n", "\t\tState: Initializing\n"))


@pytest.mark.parametrize("name", ["ib-port-down", "ib-no-sm", "dgx-h100-rail-down", "gb200-tray-rail-down"])
def test_the_paste_of_a_node_finds_what_its_bundle_finds(tmp_path, name):
    expected = yaml.safe_load((SCENARIOS / name / "expected.yaml").read_text())
    rc, d, _ = diagnose_json(tmp_path, _paste_of(name))
    assert (rc, d["verdict"], d["root_cause"]["id"]) == (1, "fault", expected["cause"])
    assert [f["cause"] for f in d["findings"]] == [expected["cause"]]  # no wrong_ib_hca beside it
    for node, outcome in expected["deciding"].items():
        assert step(d, node)["outcome"] == outcome


def _ca(name: str, state: str, phys: str, rate: int) -> str:
    # infiniband-diags ibstat, one ConnectX-7 CA with one NDR port (the tabs kept)
    return (f"CA '{name}'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.39.1002\n"
            "\tHardware version: 0\n\tNode GUID: 0x1c34da0300a1b2c4\n\tSystem image GUID: 0x1c34da0300a1b2c4\n"
            f"\tPort 1:\n\t\tState: {state}\n\t\tPhysical state: {phys}\n\t\tRate: {rate}\n\t\tBase lid: 12\n"
            "\t\tLMC: 0\n\t\tSM lid: 1\n\t\tCapability mask: 0xa651e848\n\t\tPort GUID: 0x1e34dafffea1b2c4\n"
            "\t\tLink layer: InfiniBand\n")


def _paste(hca: str, state: str = "Down", phys: str = "Polling") -> str:
    cas = [_ca(f"mlx5_{i}", state, phys, 10) if i == 1 else _ca(f"mlx5_{i}", "Active", "LinkUp", 400) for i in range(4)]
    return f"$ env | grep NCCL\nNCCL_IB_HCA={hca}\n$ ibstat\n" + "".join(cas)


# NCCL's list grammar (nccl_rules/lists.py): names, prefixes, `=` exact names with ports, `^` exclusion
@pytest.mark.parametrize("hca", ["mlx5_0,mlx5_1,mlx5_2,mlx5_3", "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1", "mlx5", "^mlx5_7"])
@pytest.mark.parametrize("state, phys", [("Down", "Polling"), ("Down", "Disabled")])
def test_a_down_port_the_job_selects_is_a_lost_rail(tmp_path, hca, state, phys):
    rc, d, _ = diagnose_json(tmp_path, _paste(hca, state, phys))
    assert (rc, d["verdict"], d["root_cause"]["id"]) == (1, "fault", "ib_port_down")
    assert step(d, "nccl_log.hca")["value"] == {"log.job.hca_problems": []}
    down = step(d, "trunk.ports_active")
    assert down["outcome"] == "yes"
    assert [(p["name"], p["state"]["name"], p["phys_state"]["name"], p["rail"]) for p in down["value"]] == [
        ("mlx5_1/1", "DOWN", phys, True)]


def test_a_down_port_the_job_excludes_is_no_lost_rail(tmp_path):
    _, d, _ = diagnose_json(tmp_path, _paste("^mlx5_1"))
    assert "ib_port_down" not in [f["cause"] for f in d["findings"]]
    assert step(d, "trunk.ports_active")["outcome"] == "no"


def test_ibstat_initializing_is_the_kernels_init(tmp_path):
    """ibstat's "Initializing" is the state sysfs prints as "2: INIT": a port up with no subnet manager."""
    rc, d, _ = diagnose_json(tmp_path, _paste("mlx5", "Initializing", "LinkUp"))
    assert (rc, d["root_cause"]["id"]) == (1, "ib_no_subnet_manager")
    init = step(d, "trunk.ports_init")
    assert init["outcome"] == "yes"
    assert [(p["name"], p["state"]) for p in init["value"]] == [("mlx5_1/1", {"code": 2, "name": "INIT"})]
