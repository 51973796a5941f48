"""Time bounds of a probe run: instances of one probe run concurrently, so a tool that hangs on
all 8 interfaces costs about one timeout; a deadline bounds the whole run, cutting each
command's timeout to the time left and marking what never started as missing."""

from __future__ import annotations

import dataclasses
import time

from allreduce_doctor.doctor import load_catalogue as load_probe_catalogue
from allreduce_doctor.hosts.live import LiveHost
from allreduce_doctor.probes.runner import ProbeRunner
from tests.scenarios.fakehost import FakeHost

NETDEVS = 8


class HungToolHost(FakeHost):
    """Sysfs of 8 RoCE ports; mlnx_qos is a real process that hangs until killed at its timeout."""

    def __init__(self) -> None:
        files = {}
        for i in range(NETDEVS):
            base = f"/sys/class/infiniband/mlx5_{i}"
            files[f"{base}/ports/1/link_layer"] = "Ethernet\n"
            files[f"{base}/device/net/eth{i}/operstate"] = "up\n"
        super().__init__(files=files, tools=("mlnx_qos",))
        self.timeouts: list[float] = []

    def run(self, argv, timeout, key=""):
        self.timeouts.append(timeout)
        return LiveHost().run(["sleep", "60"], timeout, key)


def _catalogue(timeout: float):
    catalogue = load_probe_catalogue()
    spec = dataclasses.replace(catalogue.probes["qos_mlnx"], timeout=timeout)
    return dataclasses.replace(catalogue, probes={**catalogue.probes, "qos_mlnx": spec})


def test_a_tool_hung_on_eight_interfaces_costs_about_one_timeout():
    host = HungToolHost()
    start = time.monotonic()
    obs = ProbeRunner(_catalogue(1.0), host).run({"net.qos_mlnx"}).get("net.qos_mlnx")
    elapsed = time.monotonic() - start
    assert len(host.timeouts) == NETDEVS
    assert elapsed < 2.5, f"8 hung instances with a 1 s timeout took {elapsed:.1f} s"
    assert obs.status == "error"
    assert [r["_reason"] for r in obs.value] == ["timed out after 1s (killed)"] * NETDEVS
    assert [r["name"] for r in obs.value] == [f"eth{i}" for i in range(NETDEVS)]


def test_commands_are_cut_to_the_time_left():
    host = HungToolHost()
    start = time.monotonic()
    obs = ProbeRunner(_catalogue(10.0), host, deadline=start + 0.5).run({"net.qos_mlnx"}).get("net.qos_mlnx")
    assert time.monotonic() - start < 2.0
    assert host.timeouts and max(host.timeouts) <= 0.5
    assert all(r["_reason"].startswith("timed out after 0.") for r in obs.value), obs.value


def test_a_spent_budget_marks_unstarted_probes_missing():
    host = HungToolHost()
    observed = ProbeRunner(_catalogue(10.0), host, deadline=time.monotonic() - 1).run(
        {"net.qos_mlnx", "node.identity"})
    qos = observed.get("net.qos_mlnx")
    assert host.timeouts == []
    assert qos.status == "missing" and qos.reason == "not run: the time budget was spent"
    ident = observed.get("node.identity")
    assert ident.status == "missing" and ident.reason == "not run: the time budget was spent"
