"""Shared by the terminal UI tests: sessions on scenario bundles, running the app under Pilot,
the screen as text, and a small golden-screenshot comparer.

Goldens live in tests/tui/golden/: NAME.txt (the screen's text: readable diffs) and NAME.svg
(Textual's SVG export: colours and layout). Regenerate them with
    ALLREDUCE_DOCTOR_GOLDEN=update python -m pytest tests/tui
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import io
import os
import re
from pathlib import Path

from rich.console import Console

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("ALLREDUCE_DOCTOR_GOLDEN") == "update"


def bundle(name: str) -> str:
    """A scenario bundle path relative to the repository root (tests chdir there): stable text."""
    return f"tests/fixtures/scenarios/{name}/bundle.tar.gz"


def diagnose_args(snapshot: str, *extra: str):
    from allreduce_doctor.cli import build_parser

    return build_parser().parse_args(["diagnose", "--snapshot", snapshot, *extra])


def make_session(snapshot: str, *extra: str):
    """The Session `allreduce-doctor --snapshot SNAPSHOT EXTRA...` opens in the UI."""
    from allreduce_doctor.commands.diagnose import session_from_args

    return session_from_args(diagnose_args(snapshot, *extra), interactive=True)


def run(coro):
    return asyncio.run(coro)


async def until(pilot, condition, timeout: float = 10.0) -> None:
    """Pause the pilot until condition() holds (the probes run in a thread worker)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {condition}")
        await pilot.pause(0.01)
    await pilot.pause()


async def to_diagnosis(app, pilot) -> None:
    from allreduce_doctor.tui.screens.diagnosis_screen import DiagnosisScreen

    await until(pilot, lambda: isinstance(app.screen, DiagnosisScreen) and bool(app.screen.query("#tree")))
    await pilot.pause()


@contextlib.asynccontextmanager
async def opened(name: str, size=(100, 30), session=None):
    """The app on a scenario bundle, run under Pilot until the diagnosis screen is up."""
    from allreduce_doctor.tui.app import DoctorApp

    app = DoctorApp(session or make_session(bundle(name)))
    async with app.run_test(size=size) as pilot:
        await to_diagnosis(app, pilot)
        yield app, pilot


def screen_text(app) -> str:
    """The current screen as plain text (the same render Textual exports as SVG)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens, simplify=True))
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"


def static_text(widget) -> str:
    """The plain text a Static shows (its markup rendered, styles dropped)."""
    from textual.content import Content

    content = widget.content
    return content.plain if isinstance(content, Content) else Content.from_markup(str(content)).plain


def _normalise_svg(svg: str) -> str:
    # Rich names the SVG's classes and clip paths after a hash of the content: one name for all.
    return re.sub(r"terminal-\d+", "terminal", svg)


def check_golden(app, name: str) -> None:
    """Compare the screen with tests/tui/golden/NAME.{txt,svg}; regenerate when asked."""
    text, svg = screen_text(app), _normalise_svg(app.export_screenshot(title=name))
    paths = GOLDEN / f"{name}.txt", GOLDEN / f"{name}.svg"
    if UPDATE or not paths[0].exists():
        GOLDEN.mkdir(exist_ok=True)
        paths[0].write_text(text, encoding="utf-8")
        paths[1].write_text(svg, encoding="utf-8")
        if not UPDATE:
            raise AssertionError(f"golden {name} was missing and has been written: check it in")
        return
    want = paths[0].read_text(encoding="utf-8")
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), "golden", "now"))
        raise AssertionError(f"screen {name} differs from its golden (ALLREDUCE_DOCTOR_GOLDEN=update to accept):\n{diff}")
    assert svg == paths[1].read_text(encoding="utf-8"), \
        f"screen {name}: same text, different colours or layout than {paths[1].name} (ALLREDUCE_DOCTOR_GOLDEN=update to accept)"
