"""A row of choice buttons; left and right move between them (a question's answers, the symptoms)."""

from __future__ import annotations

from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Button


class AnswerBar(Horizontal):
    BINDINGS = [Binding("left", "move(-1)", "Previous answer", show=False),
                Binding("right", "move(1)", "Next answer", show=False)]

    def action_move(self, step: int) -> None:
        buttons = list(self.query(Button))
        if buttons:
            at = next((i for i, b in enumerate(buttons) if b.has_focus), -step)
            buttons[(at + step) % len(buttons)].focus()
