"""validate's Diagnosis on screen: the `validate.*` checks in path order on the left (their badge
and outcome), the selected check's evidence (node, counter, value at its worst, expected, source)
on the right above the root-cause panel, as the diagnosis screen shows a runbook walk. A validate
Diagnosis walks no runbook tree (its steps are validate's own), so the checks are a list here.
`e` exports it like any Diagnosis; esc goes back to the run's last rates."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from allreduce_doctor.status import STEP_BADGE, STEP_UNKNOWN
from allreduce_doctor.tui.tree_model import NodeView
from allreduce_doctor.tui.widgets.detail import badge, cause_markup, node_markup, verdict_markup

RAW_HINT = "\n[$text-muted]r: raw value of the facts read here[/]"


def step_view(data: dict, step: dict) -> NodeView:
    """One validate check as the detail panel shows a runbook node."""
    rows = [e for e in data.get("evidence") or [] if e.get("node") == step["node"]]
    return NodeView(step["node"], "validate check", step.get("title") or step["node"], step.get("badge") or STEP_UNKNOWN,
                    outcome=step.get("outcome"), means=step.get("means") or "", value=None if rows else step.get("value"),
                    evidence=rows)


class ValidateResultScreen(Screen):
    BINDINGS = [Binding("e", "app.export", "Export", tooltip="export the diagnosis: choose a format, preview, save"),
                Binding("escape", "back", "Back", tooltip="back to the run's last counter rates and busbw")]

    def __init__(self, data: dict, record: str) -> None:
        super().__init__()
        self.data, self.record = data, record
        self.steps = list(data.get("path") or [])

    def compose(self) -> ComposeResult:
        yield Static(verdict_markup(self.data, f"validate of {(self.data.get('context') or {}).get('host') or '?'}"),
                     id="verdict")
        with Horizontal(id="main"):
            yield DataTable(id="validate-steps", cursor_type="row")
            with Vertical(id="right"):
                with VerticalScroll(id="detail-box"):
                    yield Static("", id="detail")
                with VerticalScroll(id="cause-box"):
                    yield Static(cause_markup(self.data), id="cause")
        yield Static(f"[$text-muted]record: {self.record} (diagnose --snapshot replays it)[/]", id="validate-record")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#validate-steps").border_title = "Checks under load"
        self.query_one("#detail-box").border_title = "Selected check"
        self.query_one("#cause-box").border_title = "Root cause"
        table = self.query_one("#validate-steps", DataTable)
        table.add_columns("", "check")
        for step in self.steps:
            table.add_row(markup(badge(step.get("badge") or STEP_UNKNOWN)), step.get("title") or step["node"],
                          key=step["node"])
        table.focus()
        if self.steps:  # after the table's own first highlight (row 0) has been handled
            self.call_after_refresh(self.show_step, self._first_deciding())

    def _first_deciding(self) -> int:
        """The check that names the root cause, else the first that is not a pass."""
        at = (self.data.get("root_cause") or {}).get("node")
        for i, step in enumerate(self.steps):
            if step["node"] == at:
                return i
        return next((i for i, s in enumerate(self.steps) if STEP_BADGE.get(s.get("badge")) != "pass"), 0)

    def show_step(self, index: int) -> None:
        table = self.query_one("#validate-steps", DataTable)
        if table.cursor_row != index:
            table.move_cursor(row=index)
        # a validate check reads whole bundles, not runbook facts: the panel's raw-value key does not apply
        text = node_markup(step_view(self.data, self.steps[index])).replace(RAW_HINT, "")
        self.query_one("#detail", Static).update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if 0 <= event.cursor_row < len(self.steps):
            self.show_step(event.cursor_row)

    def action_back(self) -> None:
        self.app.pop_screen()


def markup(text: str):
    from textual.content import Content

    return Content.from_markup(text)
