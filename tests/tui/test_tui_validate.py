"""`validate --tui` under Pilot, on the fakes of tests/validate (fake srun and nccl-tests, per-node
FakeHosts): the plan is shown and nothing runs until the user starts it; then every node's rates
per round and the busbw per size as the benchmark prints it; then validate's Diagnosis. Stopping
or quitting mid-run kills the launcher's whole step and keeps the record."""

from __future__ import annotations

import os

import pytest

from allreduce_doctor.tui.app import DoctorApp
from allreduce_doctor.tui.screens.validate_result_screen import ValidateResultScreen
from allreduce_doctor.tui.screens.validate_screen import ValidatePlanScreen, ValidateRunScreen
from allreduce_doctor.tui.screens.watch_screen import WatchScreen
from allreduce_doctor.validate.record import load_record
from allreduce_doctor.validate.tui_run import ValidateJob
from tests.tui.helpers import run, screen_text, static_text, until
from tests.validate.harness import prepared
from tests.validate.scenarios import NODES, SCENARIOS

pytestmark = pytest.mark.slow  # real-time runs: each waits on validate's counter intervals (6-9 s a test)


def job(name, tmp_path, monkeypatch, **fake):
    """The scenario's job; its benchmark keeps running until the test touches the release file."""
    scenario = SCENARIOS[name]
    held = lambda index, step: scenario.hosts_for(min(index, scenario.rounds), step)  # noqa: E731 - never releases
    make_plan, sampler = prepared(name, tmp_path, monkeypatch, hosts_for=held, fake=fake)
    return ValidateJob(make_plan, NODES, sampler, str(tmp_path / "record"), False, 0.5)


def fakes_running(tmp_path) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if str(tmp_path / "bin").encode() in fh.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def cells(app, table_id: str) -> list[list[str]]:
    table = app.screen.query_one(table_id)
    return [[getattr(c, "plain", str(c)) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def under_load(app, pilot, key: str):
    """Start the plan with `key`; the run screen once a round under load has been read."""
    await until(pilot, lambda: app.screen.ready)
    await pilot.press(key)
    screen = app.screen
    assert isinstance(screen, ValidateRunScreen)
    await until(pilot, lambda: any(r.round >= 1 for r in screen.latest.values()), timeout=30)
    return screen


def test_the_plan_is_shown_and_leaving_runs_nothing(tmp_path, monkeypatch):
    the_job = job("lossy", tmp_path, monkeypatch)

    async def go():
        app = DoctorApp(first=ValidatePlanScreen(the_job))
        async with app.run_test(size=(120, 36)) as pilot:
            await until(pilot, lambda: app.screen.ready)
            text = screen_text(app)
            assert "validate plan: 4 nodes (--nodes gpu[01-04]), launcher srun" in text
            assert "This drives traffic across 4 nodes for at most 300s." in text
            await pilot.press("escape")
        return app.return_code, str(app.error)

    assert run(go()) == (2, "not confirmed: nothing was run")
    assert not the_job.started and not (tmp_path / "record").exists() and fakes_running(tmp_path) == []


def test_a_run_shows_every_node_and_busbw_as_it_arrives_then_the_diagnosis(tmp_path, monkeypatch):
    the_job = job("lossy", tmp_path, monkeypatch, early_rows=2)

    async def go():
        app = DoctorApp(first=ValidatePlanScreen(the_job))
        async with app.run_test(size=(130, 40)) as pilot:
            await until(pilot, lambda: app.screen.ready)
            await pilot.press("enter")
            assert isinstance(app.screen, ValidateRunScreen)
            screen = app.screen
            await until(pilot, lambda: len(cells(app, "#validate-busbw")) == 2 and
                        all(r.round >= 1 for r in screen.latest.values()) and len(screen.latest) == 4, timeout=30)
            assert (tmp_path / "release").exists() is False  # the benchmark still runs: these rows arrived live
            assert cells(app, "#validate-busbw") == [["all_reduce_perf", "1.0 MiB", "12.20", "12.20"],
                                                     ["all_reduce_perf", "2.0 MiB", "20.33", "20.33"]]
            rows = {r[0]: r for r in cells(app, "#validate-nodes")}
            assert [rows[n][2] for n in NODES] == ["ok", "LOSS", "LOSS", "ok"]
            assert rows["gpu02"][8] == "4.8k"  # out_of_sequence per second, all ports
            await pilot.press("down", "w")  # gpu02's ports, its latest round, on the watch screen
            await until(pilot, lambda: isinstance(app.screen, WatchScreen) and
                        "LOSS on" in static_text(app.screen.query_one("#signatures")))
            assert static_text(app.screen.query_one("#signatures")).startswith("LOSS on enp77s0np0: retransmission")
            assert "gpu02 (validate round " in static_text(app.screen.query_one("#watch-title"))
            await pilot.press("escape")
            assert app.screen is screen
            (tmp_path / "release").touch()
            await until(pilot, lambda: isinstance(app.screen, ValidateResultScreen), timeout=30)
            assert "FAULT FOUND: roce_packet_loss (critical, owner network)" in screen_text(app)
            await until(pilot, lambda: "No packet loss under load" in static_text(app.screen.query_one("#detail")))
            detail = static_text(app.screen.query_one("#detail"))  # the check that names the root cause
            assert 'observed: {"node": "gpu02", "ports": ["enp77s0np0"], "rdma_loss": 5132, "share": "' in detail
            assert "r: raw value" not in detail  # no runbook facts behind a validate check: no raw key
            assert "expected: no transport loss; discards <= 1 ppm on the priority" in detail
            assert cells(app, "#validate-steps") == [
                ["[pass]", "Every benchmark ran to the end"], ["[pass]", "Every node was sampled while the benchmarks ran"],
                ["[FAIL]", "No all_reduce_perf busbw shortfall against the hardware's ceiling"], ["[FAIL]", "No packet loss under load"],
                ["[pass]", "No PFC pause storm or cascade under load"],
                ["[pass]", "No node is off its peers under load (median and MAD)"]]
            await pilot.press("escape")  # back to the run's last rates, and forward again with its result kept
            assert app.screen is screen and len(cells(app, "#validate-busbw")) == 14
            await pilot.press("q")
        return app.return_code

    assert run(go()) == 1
    assert load_record(tmp_path / "record")["interrupted"] is False


def test_stop_kills_the_launcher_and_judges_what_was_recorded(tmp_path, monkeypatch):
    the_job = job("launcher_hangs", tmp_path, monkeypatch)

    async def go():
        app = DoctorApp(first=ValidatePlanScreen(the_job))
        async with app.run_test(size=(120, 36)) as pilot:
            await under_load(app, pilot, "y")
            await pilot.press("s")
            await until(pilot, lambda: isinstance(app.screen, ValidateResultScreen), timeout=30)
            data = app.data
            await pilot.press("q")
        return app.return_code, data

    code, data = run(go())
    assert code == 3 and data["verdict"] == "inconclusive"
    assert {"node": "validate.launch", "reason": "all_reduce_perf: stopped by the user"} in data["inconclusive"]
    assert load_record(tmp_path / "record")["interrupted"] is True
    assert fakes_running(tmp_path) == []


def test_quit_during_a_run_stops_it_first(tmp_path, monkeypatch):
    the_job = job("launcher_hangs", tmp_path, monkeypatch)

    async def go():
        app = DoctorApp(first=ValidatePlanScreen(the_job))
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await under_load(app, pilot, "enter")
            await pilot.press("q")
            await until(pilot, lambda: screen.data is not None, timeout=30)
        return app.return_code

    assert run(go()) == 3  # inconclusive: the run was stopped
    assert fakes_running(tmp_path) == []
