"""The first screen: every probe's state while the Session observes the node.

The Session is built, and observe() and diagnose() run, in a thread worker started once the
screen has been drawn: the screen is up before the runbooks are even loaded. The probe runner's progress callback posts messages
(post_message is thread-safe), so the UI never blocks. The counter-sampling wait is a progress
bar driven by a timer, since the runner only says when the wait starts and ends."""

from __future__ import annotations

import time
from typing import cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, ProgressBar, Static

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.tui.doctor_app import doctor_app
from allreduce_doctor.tui.text import esc

# Probe states shown, with the observation statuses that end in them.
STATE_OF = {"ok": "done", "not_applicable": "not applicable", "missing": "missing", "error": "failed"}
STATE_STYLE = {"pending": "$text-muted", "running": "$text-primary b", "done": "$text-success",
               "not applicable": "$text-muted", "missing": "$text-warning", "failed": "$text-error b",
               "not needed": "$text-muted"}


class Progress(Message):
    def __init__(self, event: str, probe: str, detail: str) -> None:
        super().__init__()
        self.event, self.probe, self.detail = event, probe, detail


class Ready(Message):
    def __init__(self, session, specs: list) -> None:
        super().__init__()
        self.session, self.specs = session, specs


class Finished(Message):
    def __init__(self, data: dict | None, error: Exception | None = None, early: bool = False) -> None:
        super().__init__()
        self.data, self.error, self.early = data, error, early  # early: before any probe ran


class ProbingScreen(Screen):
    BINDINGS = [Binding("d", "show_diagnosis", "Diagnosis", tooltip="show the diagnosis (once the probes are done)"),
                Binding("w", "app.watch", "Watch", tooltip="watch the counters live (a bundle: replay its samples)")]

    def __init__(self, session=None, make_session=None, what: str = "this node") -> None:
        super().__init__()
        self.session = session  # built here with make_session() when not given
        self.make_session = make_session
        self.what = what
        self.specs: dict = {}
        self.states: dict[str, str] = {}
        self.data: dict | None = None
        self._wait: tuple[float, float] | None = None  # (start, seconds) of the counter wait

    def compose(self) -> ComposeResult:
        yield Static(f"[b]Loading[/] the probe catalogue and the runbooks to read {esc(self.what)}...", id="probe-title")
        with Horizontal(id="sampling-row"):
            yield Static("counter samples", id="sampling-label")
            yield ProgressBar(total=1, show_eta=False, id="sampling")
        yield Static("", id="probe-summary")
        yield DataTable(id="probes", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#probes", DataTable)
        table.add_column("probe", key="probe")
        table.add_column("state", key="state", width=14)
        table.add_column("reads", key="reads")
        self.set_interval(0.1, self._tick_wait)
        # Start loading once this screen has been drawn: the worker's Doctor.load is CPU work that
        # would otherwise compete with the first paint for the interpreter.
        self.call_after_refresh(self.run_worker, self._observe, thread=True, name="observe", exit_on_error=False)

    # -- the worker (a thread) -----------------------------------------------------------------
    def _observe(self) -> None:
        from allreduce_doctor.tui.state import planned_probes

        session = self.session
        try:
            if session is None:
                session = self.make_session()
            self.post_message(Ready(session, planned_probes(session)))
        except Exception as err:  # noqa: BLE001 - bad input: the app closes and run_app raises it
            self.post_message(Finished(None, err, early=True))
            return
        session.options.progress = lambda event, probe, detail: self.post_message(Progress(event, probe, detail))
        try:
            session.observe()
            data = session.diagnose().to_dict()
        except Exception as err:  # noqa: BLE001 - shown here, raised again by run_app after the UI closes
            self.post_message(Finished(None, err))
            return
        self.post_message(Finished(data))

    # -- messages --------------------------------------------------------------------------------
    def on_ready(self, msg: Ready) -> None:
        """The Session exists: list the probes it may run (messages arrive in order: first)."""
        self.session = doctor_app(self).session = msg.session
        self.specs = {spec.id: spec for spec in msg.specs}
        self.states = {pid: "pending" for pid in self.specs}
        table = self.query_one("#probes", DataTable)
        for pid, spec in self.specs.items():
            table.add_row(pid, self._state_cell("pending"), _reads(spec), key=pid)
        self.query_one("#probe-title", Static).update(self._title(self.session.options.fabric))
        self._summary()

    def on_progress(self, msg: Progress) -> None:
        if msg.event == "start" and msg.probe in self.specs:
            self._set(msg.probe, "running")
        elif msg.event == "done" and msg.probe in self.specs:
            self._set(msg.probe, STATE_OF.get(msg.detail, "failed"))
        elif msg.event == "wait":
            self._wait = (time.monotonic(), float(msg.detail or 0))
            self.query_one("#sampling-label", Static).update(f"sampling counters ({float(msg.detail or 0):g}s)")
        elif msg.event == "sample":
            self._wait = None
            bar = self.query_one("#sampling", ProgressBar)
            bar.update(total=1, progress=1)
            self.query_one("#sampling-label", Static).update("second sample read")

    def on_finished(self, msg: Finished) -> None:
        for pid, state in self.states.items():
            if state == "pending":
                self._set(pid, "not needed")
        if msg.error is not None:
            doctor_app(self).fail(msg.error)
            if msg.early:  # nothing to show: the one line is printed once the terminal is back
                doctor_app(self).action_quit_app()
                return
            what = str(msg.error) if isinstance(msg.error, DoctorError) else f"internal error: {type(msg.error).__name__}: {msg.error}"
            self.query_one("#probe-summary", Static).update(f"[$text-error b]error:[/] {esc(what)}  (q quits)")
            return
        data = cast(dict, msg.data)  # no error: _observe posted Finished(the diagnosis)
        self.data = data
        self.query_one("#probe-title", Static).update(self._title((data.get("context") or {}).get("fabric") or "?"))
        self._summary()
        doctor_app(self).show_diagnosis(data)

    def action_show_diagnosis(self) -> None:
        if self.data is not None:  # the app's latest: a paste added since may have diagnosed again
            app = doctor_app(self)
            app.show_diagnosis(app.data or self.data)
        else:
            self.notify("Still probing: the diagnosis opens when the probes are done.")

    # -- drawing ----------------------------------------------------------------------------------
    def _title(self, fabric: str) -> str:
        from allreduce_doctor.tui.state import where

        verb = "Probed" if self.data is not None else "Probing"
        return f"[b]{verb}[/] {esc(where(self.session))} · fabric {esc(fabric)}"

    def _set(self, pid: str, state: str) -> None:
        self.states[pid] = state
        self.query_one("#probes", DataTable).update_cell(pid, "state", self._state_cell(state))
        self._summary()

    def _state_cell(self, state: str):
        from textual.content import Content

        return Content.from_markup(f"[{STATE_STYLE[state]}]{state}[/]")

    def _summary(self) -> None:
        counts: dict[str, int] = {}
        for state in self.states.values():
            counts[state] = counts.get(state, 0) + 1
        parts = [f"{n} {s}" for s, n in sorted(counts.items())]
        done = "done: d shows the diagnosis" if self.data is not None else "probing"
        self.query_one("#probe-summary", Static).update(f"{len(self.specs)} probes: {', '.join(parts)} · {done}")

    def _tick_wait(self) -> None:
        if self._wait is None:
            return
        start, seconds = self._wait
        bar = self.query_one("#sampling", ProgressBar)
        bar.update(total=max(seconds, 1e-6), progress=min(time.monotonic() - start, seconds))


def _reads(spec) -> str:
    touches = spec.touches()
    text = touches[0] if touches else spec.kind
    return text + (f" (+{len(touches) - 1})" if len(touches) > 1 else "")
