"""The Textual app: wiring only. Screens, widgets and dialogs live in their own modules."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import App
from textual.binding import BindingType

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.tui.keys import APP_BINDINGS


class DoctorApp(App[int]):
    CSS_PATH = str(Path(__file__).with_name("doctor.tcss"))
    TITLE = "allreduce-doctor"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = list(APP_BINDINGS)  # a list of the base's type (invariant)

    def __init__(self, session=None, make_session=None, what: str = "this node", watch: tuple | None = None,
                 fleet: tuple | None = None, first=None) -> None:
        super().__init__()
        self.session = session  # else built by the probing screen with make_session()
        self.make_session = make_session
        self.what = what  # what the session reads, for the first screen's title
        self.watch_only = watch  # (catalogue, host, interval, label) for `allreduce-doctor watch`
        self.fleet = fleet  # (data, bundles, fabric, answers) for `allreduce-doctor fleet --tui`
        self.first = first  # a first screen of its own (`validate --tui`: its plan)
        self.data: dict | None = None
        self.error: Exception | None = None  # what stopped the probes; raised again after exit

    def on_mount(self) -> None:
        from allreduce_doctor.tui.screens.probing_screen import ProbingScreen
        from allreduce_doctor.tui.screens.watch_screen import WatchScreen

        if self.first is not None:
            self.push_screen(self.first)
        elif self.fleet is not None:
            from allreduce_doctor.tui.screens.fleet_screen import FleetScreen

            self.push_screen(FleetScreen(*self.fleet))
        elif self.watch_only is not None:
            self.push_screen(WatchScreen(*self.watch_only))
        else:
            self.push_screen(ProbingScreen(self.session, self.make_session, self.what))

    def show_diagnosis(self, data: dict) -> None:
        from allreduce_doctor.tui.screens.diagnosis_screen import DiagnosisScreen

        self.data = data
        self.push_screen(DiagnosisScreen(self.session, data))

    def fail(self, error: Exception) -> None:
        self.error = error

    def action_quit_app(self) -> None:
        from allreduce_doctor.status import EXIT_HEALTHY, error_exit, verdict_exit

        if self.error is not None:
            code = error_exit(self.error)
        else:
            data = self.fleet[0] if self.fleet else self.data  # a fleet exits with the fleet's verdict
            code = verdict_exit(data.get("verdict")) if data else EXIT_HEALTHY  # quit before any verdict
        self.exit(code, return_code=code)

    def action_help(self) -> None:
        from allreduce_doctor.tui.dialogs.help_dialog import HelpDialog

        if not isinstance(self.screen, HelpDialog):
            self.push_screen(HelpDialog())

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"

    def action_export(self) -> None:
        from allreduce_doctor.tui.dialogs.export_dialog import ExportDialog

        if self.data is None:
            self.notify("Nothing to export yet: the diagnosis is not ready.")
            return
        self.push_screen(ExportDialog(self.data))

    def action_watch(self) -> None:
        from allreduce_doctor.tui.screens.watch_screen import WatchScreen
        from allreduce_doctor.tui.state import watch_host, where

        session = getattr(self.screen, "session", None) or self.session  # a fleet's node has its own
        if session is None:
            self.notify("Still loading the runbooks: watch opens once the probes have started.")
            return
        try:
            host = watch_host(session.options.bundle, session.host.kind)
        except DoctorError as err:
            self.notify(str(err), severity="error")
            return
        if host is None:
            self.notify("No node to watch: only pasted evidence was diagnosed.", severity="warning")
            return
        self.push_screen(WatchScreen(session.catalogue, host, session.options.interval or 1.0, where(session)))


def run_app(make_session, what: str) -> int:
    """`allreduce-doctor` on a terminal: a Session in the UI. make_session() is called in the
    probing screen's worker (it loads the runbooks), so the first screen shows at once."""
    app = DoctorApp(make_session=make_session, what=what)
    code = app.run()
    if app.error is not None:
        raise app.error  # cli.main prints it in one line (bad input) or as an internal error
    return code or 0


def run_watch(catalogue, host, interval: float, label: str) -> int:
    app = DoctorApp(watch=(catalogue, host, interval, label))
    return app.run() or 0


def run_fleet(data: dict, bundles: dict, fabric: str, answers: dict[str, str]) -> int:
    app = DoctorApp(fleet=(data, bundles, fabric, answers))
    code = app.run()
    return code or 0


def run_validate(job) -> int:
    """`validate --tui`: the plan screen first; the run's verdict exit code (2: not started, an error)."""
    from allreduce_doctor.tui.screens.validate_screen import ValidatePlanScreen

    app = DoctorApp(first=ValidatePlanScreen(job))
    code = app.run()
    if app.error is not None:
        raise app.error  # cli.main prints it in one line
    return code or 0
