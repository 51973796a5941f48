"""One validate run as the terminal UI drives it: the plan first (nothing runs), the run once the
user started it, a stop from the UI, and the busbw per size as the benchmarks print it.

The validate command builds the job and hands it to the TUI (tui/app.py run_validate), as `fleet
--tui` hands over its data: the TUI imports nothing of validate. The run is the headless one
(run.py: the same launcher, watch, record and judgement).
"""

from __future__ import annotations

import threading
from pathlib import Path

from allreduce_doctor.validate.outputs import NcclTestsFeed
from allreduce_doctor.validate.plan import Plan, human_bytes, render_plan


class ValidateJob:
    """One validate run as the TUI drives it. plan_text() runs nothing; start() is called only
    after the user confirmed the plan on screen, and `stop` ends the run from the UI."""

    def __init__(self, make_plan, nodes: list[str], sampler, record: str | None, allow_busy: bool, interval: float,
                 ranks: int | None = None, sources: dict[str, str] | None = None) -> None:
        self.make_plan, self.nodes, self.sampler = make_plan, nodes, sampler
        self.record, self.allow_busy, self.interval, self.ranks = record, allow_busy, interval, ranks
        self.sources = sources  # where the plan's figures come from (commands/validate.py plan_sources)
        self.stop = threading.Event()
        self.busbw = BusbwFeed()  # fed from the benchmarks' output, on the UI's thread
        self.root: Path | None = None
        self.started = False

    def plan(self) -> Plan:
        return self.make_plan(self.ranks, None)

    def plan_text(self) -> str:
        return render_plan(self.plan(), self.sources)

    def start(self, on_round, on_output) -> dict:
        """The whole run (blocking: call it in a worker thread); its Diagnosis as JSON-ready data."""
        from allreduce_doctor.validate.run import record_folder, run_validate

        self.started = True
        self.root = record_folder(self.record)
        return run_validate(self.make_plan, self.sampler, self.root, self.allow_busy, self.interval, self.ranks,
                            on_round=on_round, on_output=on_output, stop=self.stop)


def job_from_args(args, sources: dict[str, str] | None = None) -> ValidateJob:
    """The job of a command line; `sources`: where its plan's figures come from (commands/validate.py)."""
    from allreduce_doctor.validate.run import plan_from_args, sampler_from_args

    make_plan, nodes = plan_from_args(args)
    return ValidateJob(make_plan, nodes, sampler_from_args(args, nodes), args.record, args.allow_busy, args.interval,
                       args.gpus_per_node or None, sources)


class BusbwFeed:
    """Every benchmark's size rows as its output arrives, in step order (all_reduce_perf,
    alltoall_perf; incast prints no nccl-tests table)."""

    def __init__(self) -> None:
        self.steps: dict[int, tuple[str, NcclTestsFeed]] = {}

    def add(self, index: int, name: str, data: bytes) -> None:
        if index not in self.steps:
            self.steps[index] = (name, NcclTestsFeed(name))
        self.steps[index][1].feed(data.decode("utf-8", errors="replace"))

    def rows(self) -> list[tuple[str, str, float | None, float | None]]:
        """(benchmark, size as nccl-tests' K/M/G, busbw out-of-place, busbw in-place) per size so far."""
        out = []
        for index in sorted(self.steps):
            name, feed = self.steps[index]
            for row in feed.rows():
                out.append((name, human_bytes(row["size"]), (row.get("out_of_place") or {}).get("busbw"),
                            (row.get("in_place") or {}).get("busbw")))
        return out
