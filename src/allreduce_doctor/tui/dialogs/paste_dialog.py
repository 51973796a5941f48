"""Add evidence: paste text (or name a file) and diagnose again with it.

The new Session is built and walked in a thread worker (reading a big log takes a moment); the
dialog closes with it, or shows the one-line error (a missing file, text with no signal) and
keeps what was typed, so the paste can be fixed."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static, TextArea
from textual.worker import Worker, WorkerState

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.tui.evidence_run import Sources, with_evidence
from allreduce_doctor.tui.text import esc

WHAT = ("Paste what the ticket holds: NCCL_DEBUG=INFO output, `ibstat`, `show_gids`, `mlnx_qos`, an "
        "all_reduce_perf table... or name a file. It is read with the evidence already given.")


class PasteDialog(ModalScreen):
    BINDINGS = [Binding("ctrl+s", "add", "Add", tooltip="add the text (or the file) and diagnose again"),
                Binding("escape", "dismiss", "Close", tooltip="close without adding")]

    def __init__(self, session, sources: Sources) -> None:
        super().__init__()
        self.session, self.sources = session, sources

    def compose(self) -> ComposeResult:
        with Vertical(id="paste-dialog", classes="dialog"):
            yield Static(f"[$text-muted]{esc(WHAT)}[/]", id="paste-what")
            yield TextArea(id="paste-text", soft_wrap=False, show_line_numbers=True)
            with Horizontal(classes="post-row"):
                yield Label("or a file", classes="post-label")
                yield Input(id="paste-path", placeholder="path of a saved log or tool output")
            with Horizontal(id="paste-buttons"):
                yield Button("Add", id="paste-add", variant="primary")
                yield Button("Close", id="paste-close")
            yield Static("", id="paste-status")
            yield Footer()

    def on_mount(self) -> None:
        self.query_one("#paste-dialog").border_title = "Add evidence"
        self.query_one("#paste-text", TextArea).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "paste-add":
            self.action_add()
        elif event.button.id == "paste-close":
            self.dismiss()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_add()

    def action_add(self) -> None:
        if any(w.name == "paste" and w.is_running for w in self.workers):
            return
        text = self.query_one("#paste-text", TextArea).text
        path = self.query_one("#paste-path", Input).value.strip()
        if not text.strip() and not path:
            self._status("$text-error", "paste some text or name a file first")
            return
        sources = self.sources.plus(path, text)
        self._status("$text-muted", "reading the evidence and diagnosing again...")
        self.run_worker(lambda: (sources, *with_evidence(self.session, sources)), thread=True, name="paste",
                        exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.name != "paste":
            return
        if event.state == WorkerState.SUCCESS:
            self.dismiss(event.worker.result)  # (sources, session, data)
        elif event.state == WorkerState.ERROR:
            err = event.worker.error
            self._status("$text-error", str(err) if isinstance(err, DoctorError) else f"internal error: {type(err).__name__}: {err}")

    def _status(self, style: str, message: str) -> None:
        self.query_one("#paste-status", Static).update(f"[{style}]{esc(message)}[/]")
