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
    "pause_cascade": Scenario({"gpu01": roce(eth_growth=pausing(380_000, 30_000)),
                               "gpu02": roce(eth_growth=pausing(360_000, 25_000)),
                               "gpu03": roce(eth_growth=pausing(40_000, 460_000)),
                               "gpu04": roce(eth_growth=pausing(400_000, 20_000))}, busbw=140.0),
    "dcqcn": Scenario({n: roce(counter_growth={i: {"np_cnp_sent": 180_000, "rp_cnp_handled": 175_000,
                                                   "np_ecn_marked_roce_packets": 190_000} for i in ALL_PORTS})
                       for n in NODES}),
    "ib_backpressure": Scenario({n: ib(counter_growth={i: {"port_xmit_wait": 1_200_000_000} for i in (0, 3, 6)})
                                 for n in NODES}, fabric="ib", busbw=250.0),
    "at_limit": Scenario(healthy()),
    "straggler": Scenario({**healthy("ib"), "gpu04": ib(rate={i: "200 Gb/sec (2X NDR)" for i in ALL_PORTS})},
                          fabric="ib", busbw=190.0),
    "launcher_fails": Scenario(healthy(), fake={"srun_error": "srun: error: Unable to create step for job 4242: "
                                                "Requested node configuration is not available"}),
    "launcher_hangs": Scenario(healthy(), fake={"hang": True}),
    "node_drops_out": Scenario(healthy(), gone_from={"gpu04": 2}, rounds=2),
}


# brief validate (issue 17, one derivation): each node's counters are judged by the single-node
# runbooks' checks, at their edges: at a limit is not over it, and the old rules (any port drop,
# pause frames, CNPs sent + handled, 1M xmit_wait ticks/s) would have flagged every node here.
def pause_time(rx_us: int, tx_us: int) -> dict:
    """Port 0..7 paused rx_us / tx_us microseconds on NCCL's priority within the 1 s window."""
    return {i: {"rx_prio3_pause": 2 * rx_us, "tx_prio3_pause": 2 * tx_us, "rx_prio3_pause_duration": rx_us,
                "tx_prio3_pause_duration": tx_us} for i in ALL_PORTS}


def cnps(sent: int, handled: int, more: dict | None = None) -> dict:
    """CNPs sent and handled per second on every port (the fake's traffic adds 40 of each)."""
    growth = {i: {"np_cnp_sent": sent - 40, "rp_cnp_handled": handled - 40} for i in ALL_PORTS}
    for port, counters in (more or {}).items():
        growth[port].update({k: v - 40 for k, v in counters.items()})
    return growth


XMIT_WAIT_AT_LIMIT = 937_500_000 - 41_000  # ticks of 64 bits in 1 s: 15% of 400 Gb/s (the fake adds 41,000)
PORT_DROPS = {0: {"rx_discards_phy": 5120}}  # port drops on another priority: no RDMA packet lost

SCENARIOS.update({
    "loss_edges": Scenario({**{n: roce(eth_growth=PORT_DROPS) for n in NODES},
                            "gpu02": roce(eth_growth=PORT_DROPS, counter_growth={1: {"out_of_sequence": 1}})}),
    "pause_edges": Scenario({"gpu01": roce(), "gpu02": roce(eth_growth=pause_time(0, 150_001)),
                             "gpu03": roce(eth_growth=pause_time(150_001, 0)),
                             "gpu04": roce(eth_growth=pause_time(150_000, 150_000))}),
    "cnp_edges": Scenario({**{n: roce(counter_growth=cnps(10_000, 10_000)) for n in NODES},
                           "gpu02": roce(counter_growth=cnps(10_000, 10_000, {0: {"np_cnp_sent": 10_001}})),
                           "gpu03": roce(counter_growth=cnps(10_000, 10_000, {4: {"rp_cnp_handled": 10_001}}))}),
    "xmit_wait_edges": Scenario({**{n: ib(counter_growth={i: {"port_xmit_wait": XMIT_WAIT_AT_LIMIT} for i in ALL_PORTS})
                                    for n in NODES},
                                 "gpu02": ib(counter_growth={i: {"port_xmit_wait": XMIT_WAIT_AT_LIMIT + (625_000 if i == 0 else 0)}
                                                             for i in ALL_PORTS})}, fabric="ib"),
    "loss_unmeasured": Scenario({**healthy(), "gpu04": roce(gone_later={i: ("out_of_sequence",) for i in ALL_PORTS})}),
})
