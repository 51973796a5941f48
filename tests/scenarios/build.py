"""Build the scenario bundles under tests/fixtures/scenarios/ (run: python -m tests.scenarios.build).

Each scenario is a healthy node model with one (or a few) edits, recorded through the real
probe catalogue and RecordingHost, exactly as `allreduce-doctor collect` would record it.
The expected result of each lives beside it in expected.yaml, written by hand.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from allreduce_doctor.hosts.base import HostIdentity, ProcessInfo
from tests.scenarios import nodes as N
from tests.scenarios import tools as T
from tests.scenarios.fakehost import FakeHost

SCENARIOS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"

JOB_ENV = {
    "ib": {"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7",
           "NCCL_SOCKET_IFNAME": "bond0", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"},
    "roce": {"NCCL_DEBUG": "INFO", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_TC": "106",
             "NCCL_SOCKET_IFNAME": "bond0", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"},
}


def fake_host(node: N.Node) -> FakeHost:
    files, links = N._sysfs(node, later=False)
    files_later, _ = N._sysfs(node, later=True)
    changed = {k: v for k, v in files_later.items() if files.get(k) != v}
    commands = {
        ("ibstat",): T.ibstat(node),
        ("ibv_devinfo", "-v"): T.ibv_devinfo(node),
        ("nvidia-smi", "topo", "-m"): T.reference("nvidia-smi-topo-m-h100-8gpu-8nic.txt"),
        ("nvidia-smi", "nvlink", "-s"): T.nvlink_status(node.gpus),
        ("nvidia-smi", "-q"): T.nvidia_smi_q(node.gpus),
        ("lspci", "-vvv"): T.lspci_vvv(),
        ("dmesg",): "[    2.104223] mlx5_core 0000:1a:00.0: firmware version: 28.41.1000\n",
    }
    later = {}
    tools = {"ibstat", "ibv_devinfo", "nvidia-smi", "lspci", "dmesg", "ethtool"}
    if node.fabric == "roce":
        tools.add("mlnx_qos")
        for i in range(node.ports):
            nd = N.netdev(node, i)
            commands[("ethtool", "-S", nd)] = T.ethtool_stats(node, i, later=False)
            later[("ethtool", "-S", nd)] = T.ethtool_stats(node, i, later=True)
            commands[("mlnx_qos", "-i", nd)] = T.mlnx_qos(node, i)
    env = {k: v for k, v in {**JOB_ENV[node.fabric], **node.env}.items() if v is not None}
    procs = [ProcessInfo(4242, "python3", ["python3", "train.py", "--config", "llama70b.yaml"], env, True)] if node.job else []
    return FakeHost(files=files, files_later=changed, links=links, tools=tools, commands=commands,
                    commands_later=later, processes=procs,
                    identity=HostIdentity(node.hostname, "6.8.0-45-generic", 0, True))


def record(node: N.Node, out: Path) -> None:
    from allreduce_doctor.collect import record as record_bundle

    if out.exists():
        out.unlink()
    record_bundle(fake_host(node), str(out), interval=1.0)


SCENARIOS: dict[str, N.Node] = {
    "ib-healthy": N.Node("ib"),
    "roce-healthy": N.Node("roce"),
    "ib-port-down": N.Node("ib", state={3: ("1: DOWN", "2: Polling")}, rate={3: "10 Gb/sec (4X SDR)"}),
    "ib-link-degraded": N.Node("ib", rate={5: "200 Gb/sec (2X NDR)"}),
    "ib-symbol-errors": N.Node("ib", counter_growth={2: {"symbol_error": 47, "link_error_recovery": 2}}),
    "roce-pfc-off": N.Node("roce", pfc={4: "0   0   0   0   0   0   0   0"}),
    "roce-ecn-off": N.Node("roce", ecn={i: {3: 0} for i in range(8)}),
    "roce-gid-link-local": N.Node("roce", env={"NCCL_IB_GID_INDEX": "1"}),
    "ib-no-peermem": N.Node("ib", peermem=False),
    "ib-pcie-x8": N.Node("ib", pci_width={6: 8}),
}


def main(names: list[str]) -> int:
    SCENARIOS_DIR.mkdir(parents=True, exist_ok=True)
    for name in names or sorted(SCENARIOS):
        folder = SCENARIOS_DIR / name
        folder.mkdir(exist_ok=True)
        record(SCENARIOS[name], folder / "bundle.tar.gz")
        print(f"wrote {folder / 'bundle.tar.gz'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
