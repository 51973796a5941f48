"""Each screen at 80x24 (the smallest terminal it must stay usable in) against a golden text and
SVG (see helpers.check_golden; ALLREDUCE_DOCTOR_GOLDEN=update regenerates them), plus the
diagnosis screenshot the docs show (docs/tui-diagnosis.svg, 100x30)."""

from __future__ import annotations

import threading

import pytest

from allreduce_doctor.report import render
from allreduce_doctor.session import Session
from allreduce_doctor.tui.app import DoctorApp
from allreduce_doctor.tui.screens.watch_screen import WatchScreen
from allreduce_doctor.tui.state import REPORT_FORMATS, planned_probes
from tests.tui.helpers import GOLDEN, ROOT, UPDATE, _normalise_svg, bundle, check_golden, make_session, opened, run, to_diagnosis, until

SIZE = (80, 24)
DOC_SVG = ROOT / "docs" / "tui-diagnosis.svg"


async def _diagnosis(name: str, size=SIZE, keys=(), golden: str = ""):
    async with opened(name, size) as (app, pilot):
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        check_golden(app, golden)
        return app


def test_probing_screen():
    """Frozen mid-run: the probe runner's events are played, then the worker waits."""
    session = make_session(bundle("roce-pfc-off"))
    release = threading.Event()
    ids = [s.id for s in planned_probes(session)]

    def observe():
        say = session.options.progress
        for pid in ids[:10]:
            say("start", pid, "")
            say("done", pid, "ok")
        say("done", ids[10], "missing")
        say("done", ids[11], "not_applicable")
        say("done", ids[12], "error")
        say("start", ids[13], "")
        say("wait", "", "1")
        say("sample", "", "1")
        release.wait(10)
        return Session.observe(session)

    session.observe = observe

    async def go():
        app = DoctorApp(session)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.screen_stack[-1].states.get(ids[13]) == "running")
            check_golden(app, "probing")
            release.set()
            await to_diagnosis(app, pilot)

    run(go())


def test_diagnosis_screen():
    run(_diagnosis("roce-pfc-off", golden="diagnosis"))


def test_diagnosis_screen_light_theme():
    run(_diagnosis("roce-pfc-off", keys=["t"], golden="diagnosis-light"))


def test_question_screen():
    run(_diagnosis("ib-healthy", keys=["a"], golden="question"))


def test_raw_value_dialog():
    run(_diagnosis("roce-pfc-off", keys=["r"], golden="raw"))


def test_help_dialog():
    run(_diagnosis("roce-pfc-off", keys=["question_mark"], golden="help"))


def test_export_dialog(monkeypatch):
    # The report's formats: the ticket exporters have golden files of their own.
    monkeypatch.setattr("allreduce_doctor.tui.dialogs.export_dialog.export_formats", lambda: (dict(REPORT_FORMATS), render))
    run(_diagnosis("roce-pfc-off", keys=["e"], golden="export"))


def test_watch_screen():
    async def go():
        async with opened("roce-packet-loss", SIZE) as (app, pilot):
            await pilot.press("w")
            await until(pilot, lambda: isinstance(app.screen, WatchScreen) and app.screen.watch_data.intervals == 1)
            await pilot.press("down", "down")
            await pilot.pause()
            check_golden(app, "watch")

    run(go())


def test_docs_screenshot_is_the_diagnosis_screen():
    """docs/tui-diagnosis.svg is Textual's export of the diagnosis screen on the example bundle."""
    async def go():
        async with opened("", session=make_session("examples/roce-pfc-off.tar.gz")) as (app, _pilot):
            return app.export_screenshot(title="allreduce-doctor --snapshot examples/roce-pfc-off.tar.gz")

    svg = run(go())
    if UPDATE:
        DOC_SVG.parent.mkdir(exist_ok=True)
        DOC_SVG.write_text(svg, encoding="utf-8")
    if not DOC_SVG.exists():
        pytest.fail(f"{DOC_SVG} is missing: ALLREDUCE_DOCTOR_GOLDEN=update python -m pytest tests/tui writes it")
    assert _normalise_svg(DOC_SVG.read_text(encoding="utf-8")) == _normalise_svg(svg), \
        "docs/tui-diagnosis.svg is out of date (ALLREDUCE_DOCTOR_GOLDEN=update python -m pytest tests/tui)"


def test_no_stray_goldens():
    names = {p.stem for p in GOLDEN.glob("*.txt")}
    assert names <= {"probing", "diagnosis", "diagnosis-light", "question", "raw", "help", "export", "watch", "fleet"}
