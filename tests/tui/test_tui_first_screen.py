"""The first screen comes before the knowledge (issue 14 item 12): `allreduce-doctor` hands the UI
a make_session that loads the Doctor, and the probing screen calls it in a thread worker once it
is drawn, so the screen is up while Doctor.load is still running (benchmarks/tui_first_screen.py
measures the time)."""

from __future__ import annotations

import threading

from allreduce_doctor.doctor import Doctor
from allreduce_doctor.tui.app import DoctorApp
from allreduce_doctor.tui.screens.probing_screen import ProbingScreen
from tests.tui.helpers import bundle, make_session, run, static_text, to_diagnosis, until


def test_the_probing_screen_is_up_while_the_doctor_is_still_loading(monkeypatch):
    load, release, started = Doctor.load, threading.Event(), threading.Event()

    def slow_load(*args, **kwargs):  # the knowledge, held back until the screen has been seen
        started.set()
        assert release.wait(10), "the test never released Doctor.load"
        return load(*args, **kwargs)

    monkeypatch.setattr(Doctor, "load", slow_load)
    path = bundle("roce-pfc-off")

    async def go():
        app = DoctorApp(make_session=lambda: make_session(path), what=path)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, started.is_set)  # Doctor.load runs, in the worker...
            shown = isinstance(app.screen, ProbingScreen), static_text(app.screen.query_one("#probe-title"))
            release.set()  # ...and the diagnosis follows once it returns
            await to_diagnosis(app, pilot)
            return shown, app.data["root_cause"]["id"]

    (probing, title), cause = run(go())
    assert probing and title == f"Loading the probe catalogue and the runbooks to read {path}..."
    assert cause == "pfc_not_enabled"
