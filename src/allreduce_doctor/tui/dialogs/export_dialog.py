"""Export: choose a format, preview the document, save it to a file.

The format list's cursor is the choice: the preview follows it (up/down, the mouse), and the
chosen format carries a marker and is named in words, so nothing depends on colour."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.output import write_file
from allreduce_doctor.tui.state import export_formats
from allreduce_doctor.tui.text import esc


def suffix(fmt: str) -> str:
    if "json" in fmt or "adf" in fmt:
        return ".json"
    if "markdown" in fmt or "github" in fmt or fmt == "md":
        return ".md"
    return ".txt"


def default_name(data: dict, fmt: str) -> str:
    ctx = data.get("context") or {}
    what = (data.get("root_cause") or data.get("healthy") or {}).get("id") or data.get("verdict", "report")
    host = "".join(c if c.isalnum() or c in "-_." else "_" for c in (ctx.get("host") or "node"))
    return f"allreduce-doctor-{host}-{what}{suffix(fmt)}"


CHOSEN, OTHER = "> ", "  "  # the marker before the chosen format


def format_prompt(fmt: str, chosen: bool) -> str:
    return (CHOSEN if chosen else OTHER) + fmt


def save(path: str, text: str) -> str:
    """Write a regular file atomically (a device or FIFO such as /dev/null is written in place:
    renaming over it would replace the device); the one-line message for the user either way."""
    target = Path(path).expanduser()
    try:
        write_file(target, text)  # mkstemp beside it and a rename: a planted link is never followed
    except OSError as err:
        return f"cannot write {path}: {err.strerror or err}"
    return f"saved {len(text.encode())} bytes to {target}"


class ExportDialog(ModalScreen):
    BINDINGS = [Binding("ctrl+s", "save", "Save", tooltip="save to the file named below (enter in the name does too)"),
                Binding("ctrl+p", "post", "Post",
                        tooltip="post it to GitHub or Jira: a form for the target, repository or project, base URL"),
                Binding("escape", "dismiss", "Close", tooltip="close the export dialog")]

    def __init__(self, data: dict) -> None:
        super().__init__()
        self.data = data
        self.about, self.renderer = export_formats()
        self.formats = list(self.about)
        self.fmt = self.formats[0]

    def compose(self) -> ComposeResult:
        with Vertical(id="export-dialog", classes="dialog"):
            with Horizontal(id="export-top"):
                yield OptionList(*(Option(format_prompt(fmt, fmt == self.fmt), id=fmt) for fmt in self.formats),
                                 id="formats")
                with VerticalScroll(id="preview-box"):
                    yield Static("", id="preview")
            yield Static("", id="format-about")
            with Horizontal(id="export-bottom"):
                yield Input(default_name(self.data, self.fmt), id="export-path")
                yield Button("Save", id="export-save", variant="primary")
                yield Button("Post", id="export-post")
                yield Button("Close", id="export-close")
            yield Static("", id="export-status")
            yield Footer()

    def on_mount(self) -> None:
        self.query_one("#export-dialog").border_title = "Export the diagnosis"
        self.query_one("#preview-box").border_title = "Preview"
        self._preview()
        self.query_one("#formats", OptionList).focus()

    def _text(self) -> str:
        return self.renderer(self.data, self.fmt)

    def _preview(self) -> None:
        self.query_one("#format-about", Static).update(
            f"format [b]{esc(self.fmt)}[/] [$text-muted]({esc(self.about.get(self.fmt, ''))})[/]")
        try:
            text = self._text()
        except DoctorError as err:
            text = f"cannot render {self.fmt}: {err}"
        self.query_one("#preview", Static).update(Content(text))
        self.query_one("#preview-box", VerticalScroll).scroll_home(animate=False)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        fmt = event.option.id
        if fmt is None or fmt == self.fmt:
            return
        formats = self.query_one("#formats", OptionList)
        formats.replace_option_prompt(self.fmt, format_prompt(self.fmt, False))
        formats.replace_option_prompt(fmt, format_prompt(fmt, True))
        old = default_name(self.data, self.fmt)
        self.fmt = fmt
        path = self.query_one("#export-path", Input)
        if path.value == old:  # follow the format unless the user typed a name
            path.value = default_name(self.data, self.fmt)
        self._preview()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "export-save":
            self.action_save()
        elif event.button.id == "export-post":
            self.action_post()
        elif event.button.id == "export-close":
            self.dismiss()

    def action_post(self) -> None:
        from allreduce_doctor.tui.dialogs.post_dialog import PostDialog

        self.app.push_screen(PostDialog(self.data))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_save()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.query_one("#export-path", Input).focus()  # enter on a format: on to the file name

    def action_save(self) -> None:
        path = self.query_one("#export-path", Input).value.strip()
        if not path:
            self._status("$text-error", "give a file name to save to")
            return
        try:
            message = save(path, self._text())
        except DoctorError as err:
            message = f"cannot render {self.fmt}: {err}"
        self._status("$text-error" if message.startswith("cannot") else "$text-success", message)

    def _status(self, style: str, message: str) -> None:
        self.query_one("#export-status", Static).update(f"[{style}]{esc(message)}[/]")
