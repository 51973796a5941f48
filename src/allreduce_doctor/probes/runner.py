"""Run a set of probes on a Host: sample 0 in parallel, wait, sample counters again, derive.

The instances of every probe (one per interface, port, GPU) run in one bounded thread pool, so a
tool that hangs on every interface costs about one timeout, not one per interface. A `deadline`
(a time.monotonic() value) bounds the whole run: what has not started by then is missing, and
each command's timeout is cut to the time left.

Counter probes (`sampled: true`) are read twice, `interval` seconds apart; their records carry
`values` (the second sample), `delta`, `rate` (per second) and `saturated`. Derived facts are
computed last, from other facts, in dependency order.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from allreduce_doctor.hosts.base import GlobNotRecorded, Host
from allreduce_doctor.hosts.empty import missing_reason
from allreduce_doctor.observations import ERROR, MISSING, OK, Observation, Observations
from allreduce_doctor.probes import rates
from allreduce_doctor.probes.builtins import BUILTINS
from allreduce_doctor.probes.derive import DERIVATIONS
from allreduce_doctor.probes.enumerate import Enumerator
from allreduce_doctor.probes.execute import NOT_RUN, Outcome, assemble, instance_record, prepare, run_instance
from allreduce_doctor.probes.spec import Catalogue, ProbeSpec

if TYPE_CHECKING:  # imported where used: a pasted log runs no probe (concurrent.futures is 3 ms of it)
    from concurrent.futures import Future, ThreadPoolExecutor

# progress(event, probe_id, detail): events "start", "done", "wait" (detail = seconds), "sample"
Progress = Callable[[str, str, str], None]
DEFAULT_INTERVAL = 1.0
WORKERS = 12  # concurrent probe instances: commands are mostly waiting, each is a process


def plan(catalogue: Catalogue, facts: set[str] | None) -> list[ProbeSpec]:
    """The probes needed for `facts` (all when None), inputs of derivations included."""
    by_fact = catalogue.by_fact()
    wanted = set(by_fact) if facts is None else {f for f in facts if f in by_fact}
    todo = list(wanted)
    while todo:
        spec = by_fact[todo.pop()]
        for dep in spec.inputs:
            if dep not in wanted:
                wanted.add(dep)
                todo.append(dep)
    return [p for p in catalogue.probes.values() if p.provides in wanted]


class ProbeRunner:
    def __init__(self, catalogue: Catalogue, host: Host, interval: float = DEFAULT_INTERVAL,
                 progress: Progress | None = None, deadline: float | None = None) -> None:
        self.catalogue = catalogue
        self.host = host
        self.interval = interval
        self.deadline = deadline
        self.progress = progress or (lambda *_: None)
        self.enum = Enumerator(host, catalogue.enumerators)

    def _spent(self, wait: float = 0.0) -> bool:
        """Whether the budget is spent (or would be, after waiting `wait` seconds)."""
        return self.deadline is not None and time.monotonic() + wait >= self.deadline

    def run(self, facts: set[str] | None = None, known: Observations | None = None) -> Observations:
        """Observe `facts` (all when None); facts already in `known` are not probed again."""
        specs = plan(self.catalogue, facts)
        direct = [s for s in specs if s.kind not in ("derive", "evidence")]
        evidence = [s for s in specs if s.kind == "evidence"]
        derived = [s for s in specs if s.kind == "derive"]
        result = Observations()
        if known is not None:
            direct = [s for s in direct if s.provides not in known]
            derived = [s for s in derived if s.provides not in known]
            for obs in known.values():
                result.add(obs)
        for spec in evidence:  # facts only pasted evidence provides (diagnose --evidence FILE)
            if spec.provides not in result:
                result.add(Observation(spec.provides, None, MISSING, "", "no evidence given (diagnose --evidence FILE)", spec.id))
        first: dict[str, list] = {}
        for spec, obs, outcomes in self._parallel(direct):
            result.add(obs)
            first[spec.id] = outcomes
        sampled = [s for s in direct if s.sampled and result.get(s.provides).status == OK]
        # A bundle steps to its recorded sample at once; a live node waits the interval.
        if sampled and self._spent(0.0 if self.host.kind == "snapshot" else self.interval):
            for spec in sampled:  # one sample gives no rate: unknown, as if never run
                result.add(Observation(spec.provides, None, MISSING, "", NOT_RUN, spec.id))
        elif sampled:
            self._second_sample(sampled, first, result)
        for spec in _derive_order(derived):
            result.add(self._derive(spec, result))
        return result

    # -- one sample of many probes ------------------------------------------------------
    def _parallel(self, specs: list[ProbeSpec]):
        """Every instance of every probe in one bounded pool; (spec, obs, outcomes) in spec order."""
        prepared = [(spec, self._prepare(spec)) for spec in specs]  # enumeration stays on this thread
        # A bundle answers from memory and pasted evidence reads no node: there is nothing to wait
        # for, threads would only add handoffs.
        inline = self.host.kind in ("snapshot", "evidence")
        if not inline:
            from concurrent.futures import ThreadPoolExecutor
        with contextlib.nullcontext(_Inline()) if inline else ThreadPoolExecutor(max_workers=WORKERS) as pool:
            runs = [(spec, _ProbeRun(self, spec, items, pool)) for spec, items in prepared
                    if not isinstance(items, Observation)]
            done = {spec.id: run.result() for spec, run in runs}
        for spec, items in prepared:
            if isinstance(items, Observation):
                yield spec, items, []
            else:
                yield (spec, *done[spec.id])

    def _prepare(self, spec: ProbeSpec) -> Observation | list[dict]:
        if self.host.kind == "evidence":  # no node was read: its facts are unknown, not absent
            return Observation(spec.provides, None, MISSING, "", missing_reason(spec.provides), spec.id)
        if spec.kind == "builtin":
            return [{}]
        return prepare(spec, self.host, self.enum)

    def _instance(self, spec: ProbeSpec, item: dict):
        """One instance: an Outcome, or for a builtin its Observation."""
        if spec.kind != "builtin":
            return run_instance(spec, self.host, item, self.deadline)
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return Observation(spec.provides, None, MISSING, "", NOT_RUN, spec.id)
        try:
            obs = BUILTINS[spec.builtin](self.host)
        except GlobNotRecorded as err:  # a bundle that never listed it: unknown
            obs = Observation(spec.provides, None, MISSING, "", str(err), spec.id)
        obs.fact, obs.probe = spec.provides, spec.id
        return obs

    # -- sample 1 -----------------------------------------------------------------------
    def _second_sample(self, specs: list[ProbeSpec], first: dict, result: Observations) -> None:
        t0 = self.host.sample_time()
        self.progress("wait", "", f"{self.interval:g}")
        self.host.next_sample(self.interval)
        seconds = max(self.host.sample_time() - t0, 1e-9)
        self.progress("sample", "", "1")
        for spec, _obs, outcomes in self._parallel(specs):
            group = _counter_group(spec)
            records = []
            for (item, out0), (_item1, out1) in zip(first[spec.id], outcomes):
                if out0.status == OK and out1.status == OK and isinstance(out1.value, dict):
                    record = instance_record(item, out1, key="values")
                    record.update(rates.compare(group, out0.value, out1.value, seconds))
                    record["interval"] = round(seconds, 3)
                else:
                    bad = out1 if out1.status != OK else out0
                    record = instance_record(item, bad, key="values")
                records.append(record)
            obs = result.get(spec.provides)
            if spec.foreach:
                obs.value = records
            elif records:
                obs.value = records[0]
            if records and not any("rate" in r for r in records):  # no second sample: no rate is known
                obs.status, obs.reason = MISSING, "the second counter sample could not be read"
            result.add(obs)

    # -- derived facts ------------------------------------------------------------------
    def _derive(self, spec: ProbeSpec, result: Observations) -> Observation:
        inputs = {fact: result.get(fact) for fact in spec.inputs}
        try:
            obs = DERIVATIONS[spec.builtin](inputs)
        except (KeyError, TypeError, ValueError, AttributeError) as err:  # bad input data, not a crash
            obs = Observation(spec.provides, None, ERROR, reason=f"cannot derive: {type(err).__name__}: {err}")
        obs.fact, obs.probe = spec.provides, spec.id
        obs.source = obs.source or "derived from " + ", ".join(spec.inputs)
        return obs


class _Inline:
    """The pool's submit() for a bundle: each instance runs at once, on the calling thread."""

    def submit(self, fn, *args) -> None:
        fn(*args)


class _ProbeRun:
    """The instances of one probe submitted to the pool; the last one to finish assembles the
    Observation and reports the probe done, so progress follows completion, not submission."""

    def __init__(self, runner: ProbeRunner, spec: ProbeSpec, items: list[dict], pool: ThreadPoolExecutor | _Inline) -> None:
        from concurrent.futures import Future

        self.runner, self.spec, self.items = runner, spec, items
        self.lock = threading.Lock()
        self.left = len(items)
        self.started: float | None = None
        self.results: list = [None] * len(items)
        self.error: BaseException | None = None
        self.finished: Future = Future()
        for index, item in enumerate(items):
            pool.submit(self._one, index, item)

    def _one(self, index: int, item: dict) -> None:
        with self.lock:
            first, self.started = self.started is None, self.started or time.monotonic()
        try:
            if first:
                self.runner.progress("start", self.spec.id, "")
            self.results[index] = self.runner._instance(self.spec, item)
        except BaseException as err:  # noqa: BLE001 - raised again by result(), on the caller's thread
            self.error = self.error or err
        with self.lock:
            self.left -= 1
            last = self.left == 0
        if last:
            self._finish()

    def _finish(self) -> None:
        try:
            if self.error is not None:
                raise self.error
            if self.spec.kind == "builtin":
                obs, outcomes = self.results[0], []
            else:
                outcomes = list(zip(self.items, self.results))
                obs = assemble(self.spec, outcomes, time.monotonic() - (self.started or time.monotonic()))
            self.runner.progress("done", self.spec.id, obs.status)
        except BaseException as err:  # noqa: BLE001 - the caller's thread raises it
            self.finished.set_exception(err)
            return
        self.finished.set_result((obs, outcomes))

    def result(self) -> tuple[Observation, list[tuple[dict, Outcome]]]:
        return self.finished.result()


def _counter_group(spec: ProbeSpec) -> str:
    if spec.counter_group:
        return spec.counter_group
    if spec.kind == "glob":
        return spec.pattern.rstrip("/*").rsplit("/", 1)[-1]
    return "ethtool"


def _derive_order(specs: list[ProbeSpec]) -> list[ProbeSpec]:
    """Derivations that read other derived facts run after them (simple topological order)."""
    provided = {s.provides: s for s in specs}
    ordered: list[ProbeSpec] = []
    seen: set[str] = set()

    def visit(spec: ProbeSpec, stack: tuple = ()) -> None:
        if spec.id in seen or spec.id in stack:
            return
        for dep in spec.inputs:
            if dep in provided:
                visit(provided[dep], stack + (spec.id,))
        seen.add(spec.id)
        ordered.append(spec)

    for spec in specs:
        visit(spec)
    return ordered
