"""Validate scenarios: per-node FakeHosts whose counters move as the scenario says, per round.

Round 0 is the idle baseline (no job, no traffic); later rounds are under load. Nodes are the
tests' realistic H100 models (tests/scenarios/nodes.py) with the counter growth of each fault.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tests.scenarios import nodes as N
from tests.scenarios.build import fake_host

NODES = ["gpu01", "gpu02", "gpu03", "gpu04"]
ALL_PORTS = range(8)
LOSS = {"out_of_sequence": 4812, "packet_seq_err": 311, "local_ack_timeout_err": 9}
AT_LIMIT_BUSBW = 372.0  # GB/s: 8 x 400G NICs give 400 GB/s, ~93% of it is what NCCL reaches
DROPPED = "ssh failed: Connection closed by 10.0.0.4 port 22"


def roce(**kw) -> N.Node:
    return N.Node("roce", job=False, **kw)


def ib(**kw) -> N.Node:
    return N.Node("ib", job=False, **kw)


def pausing(rx: int, tx: int) -> dict:
    return {i: {"rx_prio3_pause": rx, "tx_prio3_pause": tx, "rx_prio3_pause_duration": rx // 2,
                "tx_prio3_pause_duration": tx // 2} for i in ALL_PORTS}


@dataclass
class Scenario:
    loaded: dict[str, N.Node]  # node -> its model under load
    fabric: str = "roce"
    busbw: float = AT_LIMIT_BUSBW
    fake: dict = field(default_factory=dict)  # extra fake.json keys: fail, rc, hang, srun_error
    gone_from: dict[str, int] = field(default_factory=dict)  # node -> first round it no longer answers
    rounds: int = 1  # rounds under load: the benchmark runs until the round after them begins
    release: Path | None = None  # the file that ends the fake benchmark's run (fake.json "until")

    def hosts_for(self, index: int, step: str | None) -> dict:
        if self.release is not None and index > self.rounds:
            self.release.touch()
        out = {}
        for node in NODES:
            if index >= self.gone_from.get(node, 1 << 30):
                out[node] = DROPPED
            elif step is None:
                out[node] = fake_host(N.Node(self.fabric, job=False, traffic=False, hostname=node))
            else:
                model = self.loaded.get(node) or N.Node(self.fabric, job=False)
                model.hostname = node
                out[node] = fake_host(model)
        return out


def healthy(fabric: str = "roce") -> dict[str, N.Node]:
    return {n: N.Node(fabric, job=False) for n in NODES}


SCENARIOS = {
    "lossy": Scenario({**healthy(), "gpu02": roce(counter_growth={2: LOSS}, eth_growth={2: {"rx_discards_phy": 5120}}),
                       "gpu03": roce(counter_growth={5: LOSS})}, busbw=61.0),
    "pause_cascade": Scenario({"gpu01": roce(eth_growth=pausing(220_000, 30_000)),
                               "gpu02": roce(eth_growth=pausing(210_000, 25_000)),
                               "gpu03": roce(eth_growth=pausing(40_000, 460_000)),
                               "gpu04": roce(eth_growth=pausing(230_000, 20_000))}, busbw=140.0),
    "dcqcn": Scenario({n: roce(counter_growth={i: {"np_cnp_sent": 180_000, "rp_cnp_handled": 175_000,
                                                   "np_ecn_marked_roce_packets": 190_000} for i in ALL_PORTS})
                       for n in NODES}),
    "ib_backpressure": Scenario({n: ib(counter_growth={i: {"port_xmit_wait": 5_200_000} for i in (0, 3, 6)})
                                 for n in NODES}, fabric="ib", busbw=250.0),
    "at_limit": Scenario(healthy()),
    "straggler": Scenario({**healthy("ib"), "gpu04": ib(rate={i: "200 Gb/sec (2X NDR)" for i in ALL_PORTS})},
                          fabric="ib", busbw=190.0),
    "launcher_fails": Scenario(healthy(), fake={"srun_error": "srun: error: Unable to create step for job 4242: "
                                                "Requested node configuration is not available"}),
    "launcher_hangs": Scenario(healthy(), fake={"hang": True}),
    "node_drops_out": Scenario(healthy(), gone_from={"gpu04": 2}, rounds=2),
}
