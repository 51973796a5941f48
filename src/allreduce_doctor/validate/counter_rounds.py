"""The watch: sample every node's counters in rounds while the benchmarks run.

A round is one fan-out: every node runs the normal `collect` (two counter samples `interval`
apart, so each bundle carries rates) and answers with its bundle, exactly as `fleet` collects
(fleet/ssh_collect.py over ClusterShell). Tests give hosts in this process instead (HostSampler);
both write ROUND_DIR/NODE.tar.gz, so what is judged is always a folder of ordinary bundles.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROUNDS_DIR = "rounds"


@dataclass
class Round:
    index: int
    step: str | None  # the benchmark running when the round began; None: the idle baseline
    started: float  # seconds since the run began
    bundles: dict[str, str] = field(default_factory=dict)  # node -> bundle path, relative to the record
    failed: dict[str, str] = field(default_factory=dict)  # node -> why it gave no bundle


class FleetSampler:
    """Every node through the fleet's fan-out (ClusterShell over SSH, nothing installed on the nodes)."""

    def __init__(self, nodes: list[str], interval: float, ssh_options: str = "", fanout: int = 64,
                 timeout: float = 120.0) -> None:
        from allreduce_doctor.fleet.ssh_collect import SshOptions

        self.nodes = nodes
        self.opts = SshOptions(fanout=fanout, timeout=timeout, ssh_options=ssh_options, interval=interval)

    def sample(self, folder: Path, index: int, step: str | None) -> tuple[dict[str, Path], dict[str, str]]:
        from allreduce_doctor.fleet.ssh_collect import collect_nodes

        got = collect_nodes(",".join(self.nodes), folder, self.opts, progress=False)
        return got.bundles, got.failed


class HostSampler:
    """Hosts in this process: hosts_for(index, step) -> {node: Host, or a string saying why it is gone}."""

    def __init__(self, hosts_for: Callable[[int, str | None], dict], interval: float) -> None:
        self.hosts_for, self.interval = hosts_for, interval

    def sample(self, folder: Path, index: int, step: str | None) -> tuple[dict[str, Path], dict[str, str]]:
        from concurrent.futures import ThreadPoolExecutor

        from allreduce_doctor.capture import record

        hosts = self.hosts_for(index, step)
        failed = {node: why for node, why in hosts.items() if isinstance(why, str)}
        live = {node: host for node, host in hosts.items() if node not in failed}
        with ThreadPoolExecutor(max_workers=min(8, len(live) or 1)) as pool:  # nodes side by side, as the fan-out
            paths = {node: pool.submit(record, host, str(folder / f"{node}.tar.gz"), self.interval)
                     for node, host in live.items()}
            return {node: Path(done.result()[0]) for node, done in paths.items()}, failed


class Watch:
    """Rounds in a background thread while the launcher runs in the caller's thread."""

    def __init__(self, sampler, root: Path, interval: float, on_round: Callable[[Round], None] | None = None) -> None:
        self.sampler, self.root, self.interval, self.on_round = sampler, root, interval, on_round
        self.rounds: list[Round] = []
        self.step: str | None = None  # set by the caller as each benchmark starts
        self.begun = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def take(self) -> Round:
        index, step = len(self.rounds), self.step
        folder = self.root / ROUNDS_DIR / f"{index:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        started = round(time.monotonic() - self.begun, 3)
        bundles, failed = self.sampler.sample(folder, index, step)
        done = Round(index, step, started, {n: str(Path(p).relative_to(self.root)) for n, p in bundles.items()},
                     dict(failed))
        self.rounds.append(done)
        if self.on_round is not None:
            self.on_round(done)
        return done

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="validate-watch", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                began = time.monotonic()
                self.take()
                self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))
        except BaseException as err:  # noqa: BLE001 - reported by the caller, after the launcher stops
            self.error = err

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def progress_line(plan_seconds: float, begun: float) -> Callable[[Round], None]:
    """A one-line live view on stderr when it is a terminal: round, benchmark, nodes answering."""
    import sys

    def show(r: Round) -> None:
        if not sys.stderr.isatty():
            return
        gone = f", {len(r.failed)} gave no sample" if r.failed else ""
        sys.stderr.write(f"\r\033[Kvalidate: round {r.index} ({r.step or 'idle baseline'}), {len(r.bundles)} nodes "
                         f"sampled{gone}, {time.monotonic() - begun:.0f}s of at most {plan_seconds:g}s")
        sys.stderr.flush()
    return show
