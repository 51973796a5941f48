"""Each node's counter rates from its latest validate round, as the run screen shows them (no
Textual). The rates are the watch screen's own (watch_model.py: the same metrics, the same loss and
pause signatures), read from the round's bundle of each node. The run itself, its busbw feed and
its verdict come from validate/tui_run.py (the validate command hands the job to the TUI, as the
fleet does: the TUI imports nothing of validate).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.tui.watch_model import METRICS, CounterSource, Watch


@dataclass
class NodeRates:
    node: str
    round: int
    step: str | None  # the benchmark running; None: the idle round
    rates: dict[str, float | None]  # watch_model.METRICS, summed over the node's ports
    signals: list[str] = field(default_factory=list)  # the watch's signature texts (loss, pause cascade)
    bundle: str = ""  # this round's bundle: the per-port watch screen replays it
    error: str = ""  # the bundle could not be read


class NodeRounds:
    """Per node, a watch_model.Watch fed one round at a time (its history and signatures)."""

    def __init__(self, catalogue) -> None:
        self.catalogue = catalogue
        self.watches: dict[str, Watch] = {}

    def add(self, root: Path, index: int, step: str | None, bundles: dict[str, str]) -> list[NodeRates]:
        """Read one round's bundles (slow: call it off the UI thread, one round at a time)."""
        from allreduce_doctor.hosts.snapshot import SnapshotHost

        out = []
        for node, relative in bundles.items():
            path = str(root / relative)
            try:
                ports, _ = CounterSource(self.catalogue, SnapshotHost(path), 1.0).tick()
            except DoctorError as err:
                out.append(NodeRates(node, index, step, {m: None for m in METRICS}, bundle=path, error=str(err)))
                continue
            watch = self.watches.setdefault(node, Watch())
            watch.add(ports)
            out.append(NodeRates(node, index, step, _summed(ports), [s.text for s in watch.banner()], path))
        return out


def _summed(ports) -> dict[str, float | None]:
    rates: dict[str, float | None] = {}
    for metric in METRICS:
        known = [p.rates[metric] for p in ports if p.rates.get(metric) is not None]
        rates[metric] = float(sum(known)) if known else None
    return rates
