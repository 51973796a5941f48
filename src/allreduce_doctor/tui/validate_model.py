"""What the validate screens show, as plain data (no Textual): the run behind them, each node's
counter rates from its latest round, and the busbw per size as the benchmarks print it.

The rates are the watch screen's own (watch_model.py: the same metrics, the same loss and pause
signatures), read from the round's bundle of each node; the verdict at the end is validate's
judgement (validate/judge.py), exactly what `validate` prints headless.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.tui.watch_model import METRICS, CounterSource, Watch


class ValidateJob:
    """One validate run as the TUI drives it. plan_text() runs nothing; start() is called only
    after the user confirmed the plan on screen, and `stop` ends the run from the UI."""

    def __init__(self, make_plan, nodes: list[str], sampler, record: str | None, allow_busy: bool, interval: float,
                 ranks: int | None = None) -> None:
        self.make_plan, self.nodes, self.sampler = make_plan, nodes, sampler
        self.record, self.allow_busy, self.interval, self.ranks = record, allow_busy, interval, ranks
        self.stop = threading.Event()
        self.root: Path | None = None
        self.started = False

    def plan_text(self) -> str:
        from allreduce_doctor.validate.plan import render_plan

        return render_plan(self.make_plan(self.ranks, None))

    def start(self, on_round, on_output) -> dict:
        """The whole run (blocking: call it in a worker thread); its Diagnosis as JSON-ready data."""
        from allreduce_doctor.validate.run import record_folder, run_validate

        self.started = True
        self.root = record_folder(self.record)
        return run_validate(self.make_plan, self.sampler, self.root, self.allow_busy, self.interval, self.ranks,
                            on_round=on_round, on_output=on_output, stop=self.stop)


def job_from_args(args) -> ValidateJob:
    from allreduce_doctor.validate.run import plan_from_args, sampler_from_args

    make_plan, nodes = plan_from_args(args)
    return ValidateJob(make_plan, nodes, sampler_from_args(args, nodes), args.record, args.allow_busy, args.interval,
                       args.gpus_per_node or None)


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


class BusbwFeed:
    """Every benchmark's size rows as its output arrives, in step order (all_reduce_perf,
    alltoall_perf; incast prints no nccl-tests table)."""

    def __init__(self) -> None:
        from allreduce_doctor.validate.outputs import NcclTestsFeed

        self._feed = NcclTestsFeed
        self.steps: dict[int, tuple[str, object]] = {}

    def add(self, index: int, name: str, data: bytes) -> None:
        if index not in self.steps:
            self.steps[index] = (name, self._feed(name))
        self.steps[index][1].feed(data.decode("utf-8", errors="replace"))

    def rows(self) -> list[tuple[str, int, float | None, float | None]]:
        """(benchmark, size in bytes, busbw out-of-place, busbw in-place) per size so far."""
        out = []
        for index in sorted(self.steps):
            name, feed = self.steps[index]
            for row in feed.rows():
                out.append((name, row["size"], (row.get("out_of_place") or {}).get("busbw"),
                            (row.get("in_place") or {}).get("busbw")))
        return out
