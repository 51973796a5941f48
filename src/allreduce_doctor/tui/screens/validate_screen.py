"""`allreduce-doctor validate --tui`: the plan first, the run only once the user starts it there,
then every node's counter rates as each round arrives and the busbw per size as the benchmarks
print it, then validate's Diagnosis (validate_result.py). The job (validate/tui_run.py) comes from the
validate command: this package imports nothing of validate.

The run is the headless one (validate/run.py: the same launcher, watch, record and judgement) in a
thread worker; `s` stops it (the launcher's whole step is killed, the record kept and judged),
and quitting stops it first. Enter (or w) on a node opens its latest round on the watch screen.
"""

from __future__ import annotations

import queue
import time
from typing import cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.tui.doctor_app import doctor_app
from allreduce_doctor.tui.screens.validate_result_screen import ValidateResultScreen, markup
from allreduce_doctor.tui.text import esc
from allreduce_doctor.tui.validate_model import NodeRates, NodeRounds
from allreduce_doctor.tui.watch_model import METRICS, RATE_WIDTH, fmt_rate


class ValidatePlanScreen(Screen):
    """The dry run on screen: the commands, nodes, cap and bytes. Nothing runs from here unless
    the user starts it."""

    BINDINGS = [Binding("enter,y", "start", "Start", tooltip="start the benchmarks: traffic across every node of the plan"),
                Binding("escape,n", "cancel", "Cancel", tooltip="leave without running anything (exit 2)")]

    def __init__(self, job) -> None:
        super().__init__()
        self.job = job
        self.ready = False

    def compose(self) -> ComposeResult:
        yield Static("[b]Validate[/]: the plan. Nothing has run; nothing runs until you start it.", id="validate-title")
        with VerticalScroll(id="validate-plan-box"):
            yield Static("", id="validate-plan")
        yield Static("", id="validate-prompt")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#validate-plan-box").border_title = "Plan (--dry-run)"
        try:
            text = self.job.plan_text()
        except DoctorError as err:
            self.query_one("#validate-prompt", Static).update(f"[$text-error b]error:[/] {esc(err)}  (esc leaves)")
            return
        self.ready = True
        self.query_one("#validate-plan", Static).update(esc(text))
        plan = self.job.plan()
        self.query_one("#validate-prompt", Static).update(
            f"[$text-warning b]This drives traffic across {len(plan.nodes)} nodes for at most {plan.max_seconds:g}s.[/] "
            "[b]enter[/] (or y) starts it; [b]esc[/] (or n) leaves without running anything.")

    def action_start(self) -> None:
        if self.ready:
            self.app.switch_screen(ValidateRunScreen(self.job))

    def action_cancel(self) -> None:
        doctor_app(self).fail(DoctorError("not confirmed: nothing was run"))
        doctor_app(self).action_quit_app()


class RoundRates(Message):
    def __init__(self, rows: list[NodeRates], failed: dict[str, str]) -> None:
        super().__init__()
        self.rows, self.failed = rows, failed


class Output(Message):
    def __init__(self, index: int, name: str, data: bytes) -> None:
        super().__init__()
        self.index, self.name, self.data = index, name, data


class Finished(Message):
    def __init__(self, data: dict | None, error: Exception | None = None) -> None:
        super().__init__()
        self.data, self.error = data, error


class ValidateRunScreen(Screen):
    BINDINGS = [Binding("s", "stop", "Stop", tooltip="stop the run: the launcher's step is killed, the record kept and judged"),
                Binding("q", "quit_run", "Quit", tooltip="stop the run first, then quit with its verdict"),
                Binding("w", "node", "Node's ports", tooltip="the selected node's ports, its latest round, on the watch "
                        "screen (enter does too)")]

    def __init__(self, job) -> None:
        super().__init__()
        self.job = job
        self.rounds = NodeRounds(None)
        self.latest: dict[str, NodeRates] = {}
        self.gone: dict[str, str] = {}
        self.pending: queue.Queue = queue.Queue()  # rounds, read off the UI thread one at a time
        self.began = time.monotonic()
        self.quitting = False
        self.data: dict | None = None

    def compose(self) -> ComposeResult:
        yield Static("[b]Validate[/]: starting: the idle round samples every node first", id="validate-title")
        yield Static("", id="validate-status")
        yield DataTable(id="validate-nodes", cursor_type="row", zebra_stripes=True, cell_padding=0)
        yield DataTable(id="validate-busbw", cursor_type="none", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        from allreduce_doctor.doctor import load_catalogue

        self.rounds.catalogue = load_catalogue()
        nodes = self.query_one("#validate-nodes", DataTable)
        nodes.border_title = "Every node's counters, latest round (rates per second, all ports)"
        for key, label, width in (("node", "node", 10), ("round", "round", 6), ("signal", "signal", 7)):
            nodes.add_column(label, key=key, width=width)
        for metric, (label, _sources, _scale) in METRICS.items():
            nodes.add_column(label, key=metric, width=max(len(label), RATE_WIDTH) + 1)
        busbw = self.query_one("#validate-busbw", DataTable)
        busbw.border_title = "busbw per size, as the benchmarks print it (GB/s)"
        for label in ("benchmark", "size", "out-of-place", "in-place"):
            busbw.add_column(label, key=label)
        self._run()
        self._read_rounds()

    # -- the workers ------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="validate-run", exit_on_error=False)
    def _run(self) -> None:
        try:
            data = self.job.start(on_round=self.pending.put,
                                  on_output=lambda index, name, data: self.post_message(Output(index, name, data)))
        except Exception as err:  # noqa: BLE001 - shown on the screen; a DoctorError is one clear line
            self.post_message(Finished(None, err))
        else:
            self.post_message(Finished(data))
        finally:
            self.pending.put(None)

    @work(thread=True, exclusive=True, group="validate-rates", exit_on_error=False)
    def _read_rounds(self) -> None:
        while (r := self.pending.get()) is not None:
            try:
                rows = self.rounds.add(self.job.root, r.index, r.step, r.bundles)
            except Exception as err:  # noqa: BLE001 - a live view must not stop the run
                rows = [NodeRates(n, r.index, r.step, {m: None for m in METRICS}, error=str(err)) for n in r.bundles]
            self.post_message(RoundRates(rows, dict(r.failed)))

    # -- messages ----------------------------------------------------------------------------------
    def on_round_rates(self, msg: RoundRates) -> None:
        for row in msg.rows:
            self.latest[row.node] = row
            self.gone.pop(row.node, None)
        self.gone.update(msg.failed)
        step = msg.rows[0].step if msg.rows else None
        index = msg.rows[0].round if msg.rows else "?"
        self.query_one("#validate-title", Static).update(
            f"[b]Validate[/]: round {index} ({esc(step or 'idle, before the benchmarks')}) · "
            f"{time.monotonic() - self.began:.0f}s · s stops it")
        self._draw_nodes()

    def on_output(self, msg: Output) -> None:
        self.job.busbw.add(msg.index, msg.name, msg.data)
        table = self.query_one("#validate-busbw", DataTable)
        table.clear()
        for name, size, oop, inplace in self.job.busbw.rows():
            table.add_row(name, size, Text(_gbs(oop), justify="right"), Text(_gbs(inplace), justify="right"))
        table.scroll_end(animate=False)

    def on_finished(self, msg: Finished) -> None:
        if msg.error is not None:
            what = str(msg.error) if isinstance(msg.error, DoctorError) else f"internal error: {type(msg.error).__name__}: {msg.error}"
            doctor_app(self).fail(msg.error)
            self.query_one("#validate-status", Static).update(f"[$text-error b]error:[/] {esc(what)}  (q quits)")
            if self.quitting:
                doctor_app(self).action_quit_app()
            return
        data = cast(dict, msg.data)  # no error: _run posted Finished(job.start()'s diagnosis)
        self.data = doctor_app(self).data = data
        if self.quitting:
            doctor_app(self).action_quit_app()
            return
        self.app.push_screen(ValidateResultScreen(data, str(self.job.root)))

    def _draw_nodes(self) -> None:
        table = self.query_one("#validate-nodes", DataTable)
        row = table.cursor_row
        table.clear()
        for node in self.job.nodes:
            got = self.latest.get(node)
            if node in self.gone or got is None:
                why = self.gone.get(node, "no sample yet")
                table.add_row(node, "-", markup("[$text-error b]gone[/]" if node in self.gone else "-"),
                              *([Text("-", justify="right")] * len(METRICS)), key=node)
                if node in self.gone:
                    self.query_one("#validate-status", Static).update(f"[$text-warning]{esc(node)}: {esc(why)}[/]")
                continue
            signal = _signal(got)
            table.add_row(node, str(got.round), signal, *(Text(fmt_rate(got.rates[m]), justify="right") for m in METRICS),
                          key=node)
        if table.row_count:
            table.move_cursor(row=min(row, table.row_count - 1))
        alerts = [f"{n}: {s}" for n, r in self.latest.items() for s in r.signals if n not in self.gone]
        if alerts and not self.gone:
            self.query_one("#validate-status", Static).update("\n".join(f"[$text-warning b]{esc(a)}[/]" for a in alerts[:3]))

    # -- actions -----------------------------------------------------------------------------------
    def action_stop(self) -> None:
        if self.data is not None or not self.job.started:
            return
        self.job.stop.set()
        self.query_one("#validate-status", Static).update("[$text-warning b]stopping: the launcher's step is being "
                                                          "killed; the record is kept and judged[/]")

    def action_quit_run(self) -> None:
        if self.data is not None or doctor_app(self).error is not None:
            doctor_app(self).action_quit_app()
            return
        self.quitting = True
        self.action_stop()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_node()

    def action_node(self) -> None:
        from allreduce_doctor.hosts.snapshot import SnapshotHost
        from allreduce_doctor.tui.screens.watch_screen import WatchScreen

        table = self.query_one("#validate-nodes", DataTable)
        if not table.row_count:
            return
        node = self.job.nodes[table.cursor_row]
        got = self.latest.get(node)
        if got is None or not got.bundle or got.error:
            self.notify(f"{node}: no readable round yet.", severity="warning")
            return
        self.app.push_screen(WatchScreen(self.rounds.catalogue, SnapshotHost(got.bundle), 1.0,
                                         f"{node} (validate round {got.round})"))

    def on_unmount(self) -> None:
        self.job.stop.set()  # the app is closing: never leave the launcher running


def _signal(row: NodeRates):
    """The watch screen's words: LOSS, PAUSE (a pause cascade's signature), ok; unread: no bundle."""
    if row.error:
        return markup("[$text-warning b]unread[/]")
    if any(s.startswith("LOSS") for s in row.signals):
        return markup("[$text-error b]LOSS[/]")
    if row.signals:
        return markup("[$text-warning b]PAUSE[/]")
    return markup("[$text-success]ok[/]")


def _gbs(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
