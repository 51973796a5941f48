"""The demo is physically consistent (issue 14 item 12): no pause frames on a NIC whose PFC is
off. PFC pauses per priority (IEEE 802.1Qbb), so a port with no PFC-enabled priority neither
sends nor counts PFC frames; the scenario generator (tests/scenarios/tools.py) and the example
bundle the README opens (examples/roce-pfc-off.tar.gz) follow that."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from allreduce_doctor.doctor import Doctor, load_catalogue
from allreduce_doctor.hosts.snapshot import SnapshotHost
from allreduce_doctor.session import Session
from allreduce_doctor.tui.screens.watch_screen import WatchScreen
from allreduce_doctor.tui.watch_model import CounterSource
from tests.scenarios.build import SCENARIOS
from tests.tui.helpers import bundle, make_session, opened, run, screen_text, until

DEMO = "examples/roce-pfc-off.tar.gz"
PFC_OFF_SOMEWHERE = [name for name, node in SCENARIOS.items()
                     if any(set(row.split()) == {"0"} for row in getattr(node, "pfc", {}).values())]


def pfc_off_netdevs(path: str) -> set[str]:
    session = Session(Doctor.load(), SnapshotHost(path))
    session.observe()
    return {p["name"] for p in session.observations.get("roce.priority").value if not p["pfc_enabled"]}


def pause_rates(path: str) -> dict[str, float]:
    ports, _seconds = CounterSource(load_catalogue(), SnapshotHost(path), 1.0).tick()
    return {p.netdev: p.rates["pause"] for p in ports}


def test_the_demos_watch_screen_shows_no_pause_on_the_nic_whose_pfc_is_off():
    async def go():
        async with opened("", session=make_session(DEMO)) as (app, pilot):
            await pilot.press("w")
            await until(pilot, lambda: isinstance(app.screen, WatchScreen) and app.screen.watch_data.intervals == 1)
            table = app.screen.query_one("#ports", DataTable)
            cells = {str(table.get_cell(row, "netdev")): str(table.get_cell(row, "pause")) for row in table.rows}
            return app.data["root_cause"]["id"], cells, screen_text(app)

    cause, pause, text = run(go())
    assert cause == "pfc_not_enabled" and pfc_off_netdevs(DEMO) == {"enp155s0np0"}
    assert "mlx5_4/1 enp155s0np0 ok           93       0 " in text  # as shown, not only as stored
    assert pause["enp155s0np0"] == "0"
    assert {v for k, v in pause.items() if k != "enp155s0np0"} == {"240"}  # PFC on: the pause frames stay


@pytest.mark.parametrize("name", PFC_OFF_SOMEWHERE)
def test_no_scenario_counts_pause_frames_on_a_port_without_pfc(name):
    path = bundle(name)
    off = pfc_off_netdevs(path)
    assert off, f"{name}: expected a port with PFC off"
    rates = pause_rates(path)
    assert {nd: rates[nd] for nd in off} == {nd: 0.0 for nd in off}
