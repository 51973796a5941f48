"""Run a validate scenario on the fakes: fake srun and nccl-tests on PATH, per-node FakeHosts."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from allreduce_doctor.cli import build_parser
from allreduce_doctor.validate.counter_rounds import HostSampler
from allreduce_doctor.validate.run import plan_from_args, run_validate
from tests.validate import fakes
from tests.validate.scenarios import NODES, SCENARIOS


class ReusingSampler(HostSampler):
    """HostSampler that records each node's idle and loaded model once and copies the bundle into
    later rounds (the same model gives the same bundle; recording is the slow part of a test)."""

    def __init__(self, hosts_for, interval):
        super().__init__(hosts_for, interval)
        self.made: dict[tuple, Path] = {}

    def sample(self, folder, index, step):
        hosts = self.hosts_for(index, step)
        reuse = {n: self.made[(n, step is None)] for n, h in hosts.items()
                 if not isinstance(h, str) and (n, step is None) in self.made}
        fresh = {n: h for n, h in hosts.items() if n not in reuse}
        bundles, failed = HostSampler(lambda i, s: fresh, self.interval).sample(folder, index, step)
        for node, path in bundles.items():
            self.made[(node, step is None)] = path
        for node, path in reuse.items():
            bundles[node] = Path(shutil.copyfile(path, folder / path.name))
        return {n: bundles[n] for n in hosts if n in bundles}, failed


def prepared(name, tmp_path, monkeypatch, *extra, max_seconds=None, hosts_for=None, fake=None):
    """(make_plan, sampler) of a scenario on the fakes: srun, nccl-tests and perftest on PATH."""
    scenario = SCENARIOS[name]
    scenario.release = tmp_path / "release"
    bindir = fakes.install(tmp_path / "bin", {"busbw": scenario.busbw, "until": str(scenario.release),
                                              "expanded": ",".join(NODES), **scenario.fake, **(fake or {})})
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    args = build_parser().parse_args(["validate", "--nodes", "gpu[01-04]", "--nccl-tests", str(bindir), "--yes",
                                      "--interval", "0.5", "--benchmarks", "all_reduce_perf", *extra])
    make_plan, _ = plan_from_args(args)
    if max_seconds:
        make_plan = (lambda real: lambda ranks, root: replace(real(ranks, root), max_seconds=max_seconds))(make_plan)
    return make_plan, ReusingSampler(hosts_for or scenario.hosts_for, 1.0)


def run_scenario(name, tmp_path, monkeypatch, *extra, max_seconds=None, hosts_for=None):
    make_plan, sampler = prepared(name, tmp_path, monkeypatch, *extra, max_seconds=max_seconds, hosts_for=hosts_for)
    root = tmp_path / "record"
    root.mkdir()
    data = run_validate(make_plan, sampler, root, False, 0.5, on_round=lambda r: None)
    return data, root


def cause(data):
    return (data.get("root_cause") or {}).get("id")
