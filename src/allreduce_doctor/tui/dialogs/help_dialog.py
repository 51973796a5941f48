"""Help: every key, read from the bindings themselves (so it cannot drift from them)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from allreduce_doctor.tui.keys import APP_BINDINGS
from allreduce_doctor.tui.text import esc

# Keys that belong to Textual's own widgets, as this app uses them.
NAVIGATION = [
    ("up / down", "move in the tree, the probe list or the port table"),
    ("enter / space", "expand a step to its other outcomes (tree)"),
    ("shift+left", "go to the parent step (tree)"),
    ("tab / shift+tab", "next / previous panel or button"),
    ("left / right", "between the answer buttons; enter picks one"),
    ("mouse", "click a step, a button or a port; scroll any panel with the wheel"),
]


KEY_PADDING = 3  # .help-key's padding in doctor.tcss: 2 to indent, 1 to keep a gap


def key_label(binding: Binding) -> str:
    names = {"question_mark": "?", "escape": "esc"}
    return binding.key_display or " / ".join(names.get(k.strip(), k.strip()) for k in binding.key.split(","))


def key_sections() -> list[tuple[str, list[tuple[str, str]]]]:
    """(where, [(keys, what)]) for the app and every screen and dialog."""
    from allreduce_doctor.tui.dialogs.export_dialog import ExportDialog
    from allreduce_doctor.tui.dialogs.paste_dialog import PasteDialog
    from allreduce_doctor.tui.dialogs.post_dialog import PostDialog
    from allreduce_doctor.tui.dialogs.raw_dialog import RawDialog
    from allreduce_doctor.tui.dialogs.symptom_dialog import SymptomDialog
    from allreduce_doctor.tui.screens.diagnosis_screen import DiagnosisScreen
    from allreduce_doctor.tui.screens.fleet_screen import FleetScreen, NodeDiagnosisScreen
    from allreduce_doctor.tui.screens.probing_screen import ProbingScreen
    from allreduce_doctor.tui.screens.validate_result_screen import ValidateResultScreen
    from allreduce_doctor.tui.screens.validate_screen import ValidatePlanScreen, ValidateRunScreen
    from allreduce_doctor.tui.screens.watch_screen import WatchScreen

    def rows(cls) -> list[tuple[str, str]]:
        return [(key_label(b), b.tooltip or b.description) for b in cls.BINDINGS if isinstance(b, Binding)]

    return [
        ("Everywhere", [(key_label(b), b.tooltip or b.description) for b in APP_BINDINGS]),
        ("Probing screen", rows(ProbingScreen)),
        ("Diagnosis screen", rows(DiagnosisScreen)),
        ("Watch screen", rows(WatchScreen)),
        ("Raw value dialog", rows(RawDialog)),
        ("Export dialog", rows(ExportDialog) + [("up / down", "choose the format: the preview follows, > marks it"),
                                                ("enter", "on a format: on to the file name")]),
        ("Post dialog", rows(PostDialog) + [("left / right, enter", "choose github or jira (the defaults follow)")]),
        ("Add evidence dialog", rows(PasteDialog)),
        ("Symptom dialog", rows(SymptomDialog) + [("left / right, enter", "choose what the reporter saw")]),
        ("Fleet screen", rows(FleetScreen) + [("enter", "on a node: its own diagnosis; on a setting: its first odd node")]),
        ("A fleet's node", rows(NodeDiagnosisScreen)),
        ("Validate plan", rows(ValidatePlanScreen)),
        ("Validate run", rows(ValidateRunScreen)),
        ("Validate result", rows(ValidateResultScreen)),
        ("Help", rows(HelpDialog)),
        ("Navigation", NAVIGATION),
    ]


class HelpDialog(ModalScreen):
    BINDINGS = [Binding("escape,question_mark", "dismiss", "Close", tooltip="close this help")]

    def compose(self) -> ComposeResult:
        sections = key_sections()
        # The key column fits the widest label and a gap (its CSS padding), so a label never runs
        # into its description ("up / down, enterchoose").
        width = max(len(keys) for _, rows in sections for keys, _ in rows) + KEY_PADDING
        with Vertical(id="help-dialog", classes="dialog"):
            with VerticalScroll(id="help-scroll"):
                for title, rows in sections:
                    yield Static(f"[b $text-accent]{esc(title)}[/]", classes="help-title")
                    for keys, what in rows:  # two columns, so a long line wraps under its text
                        key = Static(f"[b]{esc(keys)}[/]", classes="help-key")
                        key.styles.width = width
                        yield Horizontal(key, Static(esc(what), classes="help-what"), classes="help-row")
            yield Footer()

    def on_mount(self) -> None:
        self.query_one("#help-dialog").border_title = "Keys"
        self.query_one("#help-scroll").focus()
