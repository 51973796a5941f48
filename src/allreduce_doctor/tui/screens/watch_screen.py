"""The watch screen: per-port counter rates, refreshed every interval from the Host, with
sparklines for the selected port and the loss / pause-cascade signatures called out.

On a bundle it replays the recorded samples: a bundle holds two samples, so one interval; the
title says so rather than pretending to be live."""

from __future__ import annotations

import time

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Sparkline, Static
from textual.worker import get_current_worker

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.tui.text import esc
from allreduce_doctor.tui.watch_model import METRICS, NO_PORTS, RATE_WIDTH, CounterSource, Watch, fmt_rate


class Tick(Message):
    def __init__(self, ports: list, interval: float | None, error: str = "") -> None:
        super().__init__()
        self.ports, self.interval, self.error = ports, interval, error


class WatchScreen(Screen):
    BINDINGS = [Binding("space", "pause", "Pause", tooltip="pause or resume the live sampling"),
                Binding("escape", "back", "Back", tooltip="back to the diagnosis")]

    def __init__(self, catalogue, host, interval: float, label: str) -> None:
        super().__init__()
        self.source = CounterSource(catalogue, host, interval)
        self.watch_data = Watch()
        self.label = label
        self.interval = interval
        self.paused = False
        self.selected: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="watch-title")
        yield Static("waiting for the first interval...", id="signatures")
        # One space between columns (not two): the 13 columns fit 120 terminal columns, so no rate is
        # cut at the edge (a cut "41.0k" reads "41.0": a 1000x misreading).
        yield DataTable(id="ports", cursor_type="row", zebra_stripes=True, cell_padding=0)
        with VerticalScroll(id="sparks"):
            for metric, (label, _sources, _scale) in METRICS.items():  # updated in place each tick
                with Horizontal(classes="spark-row"):
                    yield Static(label, classes="spark-label")
                    yield Sparkline([], id=f"spark-{metric}", classes="spark")
                    yield Static("-", id=f"value-{metric}", classes="spark-value")
            yield Static("", id="pause-prio", classes="spark-note")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#ports", DataTable)
        # Fixed widths: a live table must not jitter as values change.
        table.add_column("port", key="port", width=9)
        table.add_column("netdev", key="netdev", width=12)
        table.add_column("signal", key="signal", width=7)
        for metric, (label, _sources, _scale) in METRICS.items():
            table.add_column(label, key=metric, width=max(len(label), RATE_WIDTH) + 1)
        self.query_one("#sparks").border_title = "History"
        self._sample()

    def _title(self) -> str:
        if self.source.recorded is not None:
            n = self.source.recorded
            mode = f"{n} interval{'s' if n != 1 else ''} recorded"
        else:
            mode = f"every {self.interval:g}s" + (" [b $text-warning]paused[/]" if self.paused else "")
        return f"[b]Watch[/] {esc(self.label)} · {mode}"

    # -- the worker ------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="watch", exit_on_error=False)
    def _sample(self) -> None:
        worker = get_current_worker()
        while not worker.is_cancelled and not self.source.exhausted:
            if self.paused:
                time.sleep(0.1)
                continue
            try:
                ports, interval = self.source.tick()
            except Exception as err:  # noqa: BLE001 - shown on the screen; the rest of the app goes on
                what = str(err) if isinstance(err, DoctorError) else f"internal error: {type(err).__name__}: {err}"
                self.post_message(Tick([], None, what))
                return
            self.post_message(Tick(ports, interval))
            if not ports:  # no RDMA port: nothing will ever show up
                return

    def on_tick(self, msg: Tick) -> None:
        if msg.error:
            self.query_one("#signatures", Static).update(f"[$text-error b]error:[/] {esc(msg.error)}")
            return
        if msg.interval:
            self.query_one("#sparks").border_subtitle = f"rates over the last {msg.interval:g}s"
        self.watch_data.add(msg.ports)
        self._table()
        self._signatures()
        self._sparks()

    # -- drawing ----------------------------------------------------------------------------------
    def _table(self) -> None:
        table = self.query_one("#ports", DataTable)
        signals = {s.port: s.kind for s in self.watch_data.signatures()}
        row = table.cursor_row
        table.clear()
        for p in self.watch_data.ports():
            signal = {"loss": "[$text-error b]LOSS[/]", "pause_cascade": "[$text-warning b]PAUSE[/]"}.get(
                signals.get(p.port, ""), "[$text-success]ok[/]")
            table.add_row(p.port, p.netdev, _markup(signal),
                          *(Text(fmt_rate(p.rates[m]), justify="right") for m in METRICS), key=p.port)
        if table.row_count:
            table.move_cursor(row=min(row, table.row_count - 1))
            self.selected = self.watch_data.ports()[table.cursor_row].port

    def _signatures(self) -> None:
        if not self.watch_data.latest:
            self.query_one("#signatures", Static).update(f"[$text-warning b]{NO_PORTS}[/]")
            return
        sigs = self.watch_data.banner()
        text = "\n".join(f"[$text-error b]{esc(s.text)}[/]" if s.kind == "loss" else f"[$text-warning b]{esc(s.text)}[/]"
                         for s in sigs)
        if not text:
            text = ("[$text-success]No loss or pause-cascade signature[/] "
                    "[$text-muted](loss: retransmissions climbing; cascade: pause rising while nothing drops)[/]")
        if self.source.recorded and self.source.recorded > 1:
            text += f"\n[$text-muted]Replayed {self.watch_data.intervals} of {self.source.recorded} recorded intervals.[/]"
        self.query_one("#signatures", Static).update(text)

    def _sparks(self) -> None:
        if self.selected is None:
            return
        port = self.watch_data.latest[self.selected]
        series = self.watch_data.history[self.selected]
        points = len(series["pause"])
        self.query_one("#sparks").border_title = f"History of {port.netdev or port.port} ({points} point{'s' if points != 1 else ''})"
        for metric in METRICS:
            self.query_one(f"#spark-{metric}", Sparkline).data = _points(series[metric])
            self.query_one(f"#value-{metric}", Static).update(fmt_rate(port.rates[metric]))
        prio = ", ".join(f"prio{p} rx {fmt_rate(rx)} tx {fmt_rate(tx)}" for p, (rx, tx) in sorted(port.pause_by_prio.items()))
        saturated = f" · saturated: {', '.join(port.saturated)}" if port.saturated else ""
        self.query_one("#pause-prio", Static).update(f"pause by priority: {prio or 'none'}{saturated}")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value in self.watch_data.latest:
            self.selected = event.row_key.value
            self._sparks()

    def action_pause(self) -> None:
        if self.source.recorded is not None:
            self.notify("A bundle replays its recorded samples; nothing to pause.")
            return
        self.paused = not self.paused
        self.query_one("#watch-title", Static).update(self._title())

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()


def _points(values: list[float]) -> list[float]:
    """One point is drawn flat (a lone value shows no trend; Sparkline would draw a full bar)."""
    return list(values) * 2 if len(values) == 1 else list(values)


def _markup(text: str):
    from textual.content import Content

    return Content.from_markup(text)
