"""The raw value behind a step: each fact it read, untruncated, with its status and where it
came from (the sysfs paths, globs or argv of its probe; for a derived fact, its inputs)."""

from __future__ import annotations

import json

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from allreduce_doctor.tui.text import esc
from allreduce_doctor.tui.widgets.detail import OBS_STYLE

MAX_CHARS = 200_000  # a whole GID table or lspci fits; a runaway value does not freeze the UI


def raw_text(obs) -> str:
    text = json.dumps(obs.value, indent=2, sort_keys=True, default=str)
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + f"\n... ({len(text) - MAX_CHARS} more characters)"


class RawDialog(ModalScreen):
    BINDINGS = [Binding("escape,r", "dismiss", "Close", tooltip="close the raw values")]

    def __init__(self, key: str, observations: list, catalogue) -> None:
        super().__init__()
        self.key = key
        self.observations = observations
        self.catalogue = catalogue

    def compose(self) -> ComposeResult:
        with Vertical(id="raw-dialog", classes="dialog"):
            with VerticalScroll(id="raw-scroll"):
                if not self.observations:
                    yield Static("This step reads no observed fact (a question, a leaf, or a constant check).")
                for obs in self.observations:
                    yield Static(self._header(obs), classes="raw-header")
                    yield Static(Content(raw_text(obs)), classes="raw-value")
            yield Footer()

    def on_mount(self) -> None:
        self.query_one("#raw-dialog").border_title = f"Raw values read by {self.key}"
        self.query_one("#raw-scroll").focus()

    def _header(self, obs) -> str:
        style = OBS_STYLE.get(obs.status, "$text-muted")
        lines = [f"[b]{esc(obs.fact)}[/] [{style}]\\[{esc(obs.status)}][/]  probe {esc(obs.probe or '-')}"]
        lines.append(f"source: {esc(obs.source or '-')}")
        if obs.reason:
            lines.append(f"[$text-warning]reason: {esc(obs.reason)}[/]")
        spec = self.catalogue.probes.get(obs.probe)
        if spec is not None and spec.kind == "derive":
            lines.append(f"derived from: {esc(', '.join(spec.inputs))}")
        elif spec is not None:
            lines += [f"reads: {esc(t)}" for t in spec.touches()[:6]]
        return "\n".join(lines)
