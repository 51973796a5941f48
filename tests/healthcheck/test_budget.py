"""ProbeRunner's deadline: probes not started in time are unknown, commands get only the time left."""

from __future__ import annotations

import time

from allreduce_doctor.doctor import load_catalogue as load_probe_catalogue
from allreduce_doctor.hosts.snapshot import SnapshotHost
from allreduce_doctor.observations import MISSING
from allreduce_doctor.probes.execute import NOT_RUN as BUDGET_SPENT
from allreduce_doctor.probes.runner import ProbeRunner
from tests.healthcheck.conftest import bundle

CATALOGUE = load_probe_catalogue()


class TimedHost:
    """A bundle that answers like a live node: records each command's timeout, waits for real."""

    kind = "timed"

    def __init__(self, inner: SnapshotHost) -> None:
        self.inner, self.timeouts = inner, []

    def run(self, argv, timeout, key=""):
        self.timeouts.append((argv[0], timeout))
        return self.inner.run(argv, timeout, key)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_a_spent_budget_leaves_every_probe_unknown():
    runner = ProbeRunner(CATALOGUE, SnapshotHost(bundle("roce-pfc-off")), 0, deadline=time.monotonic() - 1)
    result = runner.run({"rdma.ports", "net.qos_mlnx", "kernel.cmdline"})
    for fact in ("rdma.ports", "net.qos_mlnx", "kernel.cmdline"):
        obs = result.get(fact)
        assert (obs.status, obs.reason) == (MISSING, BUDGET_SPENT), fact
        # a fan-out probe keeps its instances, each marked not run (never a value read)
        assert obs.value is None or all(r["_status"] == MISSING and r["value"] is None for r in obs.value), fact


def test_each_command_gets_at_most_the_time_left():
    host = TimedHost(SnapshotHost(bundle("roce-pfc-off")))
    deadline = time.monotonic() + 3.0
    ProbeRunner(CATALOGUE, host, 0, deadline=deadline).run({"net.qos_mlnx", "tools.ibv_devinfo"})
    specs = {s.argv[0]: s.timeout for s in CATALOGUE.probes.values() if s.kind == "command"}
    assert host.timeouts, "no command ran"
    for tool, timeout in host.timeouts:
        assert 0 < timeout <= 3.0 < specs[tool], (tool, timeout)


def test_without_a_deadline_commands_keep_their_own_timeout():
    host = TimedHost(SnapshotHost(bundle("roce-pfc-off")))
    ProbeRunner(CATALOGUE, host, 0).run({"net.qos_mlnx"})
    specs = {s.argv[0]: s.timeout for s in CATALOGUE.probes.values() if s.kind == "command"}
    assert host.timeouts and all(timeout == specs[tool] for tool, timeout in host.timeouts)


def test_a_counter_window_past_the_deadline_is_not_waited_for():
    host = TimedHost(SnapshotHost(bundle("roce-pause-storm")))
    start = time.monotonic()
    result = ProbeRunner(CATALOGUE, host, 60, deadline=start + 5).run({"net.ethtool_stats", "rdma.hw_counters"})
    assert time.monotonic() - start < 5
    for fact in ("net.ethtool_stats", "rdma.hw_counters"):
        obs = result.get(fact)
        assert (obs.status, obs.reason) == (MISSING, BUDGET_SPENT), fact
