"""The symptom question of a paste: what did the reporter see? (`diagnose --symptom`.) The answer
re-ranks the candidates: a slow job favours the causes that cost bandwidth, a hang those whose
traffic never completes."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Static

from allreduce_doctor.symptoms import SYMPTOMS
from allreduce_doctor.tui.text import esc
from allreduce_doctor.tui.widgets.answers import AnswerBar

NOT_SAID = "not said"
MEANS = {"hang": "the job stops with no error", "slow": "it runs, at low bus bandwidth",
         "crash": "a rank dies", "error": "NCCL reports an error and stops"}


class SymptomDialog(ModalScreen):
    """Dismisses with the chosen symptom, "" for not said, None when closed without a choice."""

    BINDINGS = [Binding("escape", "dismiss", "Close", tooltip="close without changing the symptom")]

    def __init__(self, current: str | None) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="symptom-dialog", classes="dialog"):
            yield Static("[b]What did the reporter see?[/]  "
                         + "; ".join(f"{s}: {esc(MEANS[s])}" for s in SYMPTOMS), id="symptom-ask")
            with AnswerBar(id="symptom-choices"):
                for choice in (*SYMPTOMS, NOT_SAID):
                    chosen = choice == (self.current or NOT_SAID)
                    yield Button(f"> {choice}" if chosen else choice, name=choice, classes="symptom",
                                 variant="primary" if chosen else "default")
            yield Footer()

    def on_mount(self) -> None:
        self.query_one("#symptom-dialog").border_title = "Symptom"
        buttons = list(self.query(Button))
        next((b for b in buttons if b.variant == "primary"), buttons[0]).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        choice = event.button.name
        self.dismiss("" if choice == NOT_SAID else choice)
