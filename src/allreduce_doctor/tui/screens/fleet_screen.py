"""The fleet screen (`allreduce-doctor fleet ... --tui`): the compared settings (majority value,
then the odd nodes with their values highlighted) and the nodes with their own verdicts. Enter
on a node diagnoses its bundle in a thread worker, exactly as `diagnose --snapshot NODE.tar.gz`,
and opens it on the diagnosis screen; esc comes back to the fleet."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import Worker, WorkerState

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.status import HEALTHY
from allreduce_doctor.tui.doctor_app import doctor_app
from allreduce_doctor.tui.fleet_model import fleet_title, node_rows, setting_rows
from allreduce_doctor.tui.screens.diagnosis_screen import DiagnosisScreen
from allreduce_doctor.tui.text import esc
from allreduce_doctor.tui.widgets.detail import VERDICT_STYLE

ODD_STYLE = "$text-error b"
# What the screen holds of a big fleet: a setting's cell names its first odd nodes, the node table
# its first rows (the named and unhealthy nodes first); the border says what was left out and
# where it is whole (`fleet --format json`).
MAX_ODD_SHOWN = 8
MAX_NODE_ROWS = 1000
WHOLE = "all in `fleet --format json`"


def _cell(markup: str) -> Content:
    return Content.from_markup(markup)


def _add_rows(table: DataTable, columns: tuple[str, ...], rows: list[tuple[str, list]]) -> None:
    """Columns as wide as their widest cell (the table does not measure styled content itself)."""
    plain = [[c.plain if isinstance(c, Content) else str(c) for c in cells] for _, cells in rows]
    for i, name in enumerate(columns):
        table.add_column(name, width=max([len(name)] + [len(p[i]) for p in plain]))
    for key, cells in rows:
        table.add_row(*cells, key=key)


class NodeDiagnosisScreen(DiagnosisScreen):
    """One node of the fleet on the usual diagnosis screen, with a way back."""

    BINDINGS = [Binding("escape", "back", "Fleet", tooltip="back to the fleet (p does too)")]

    def on_mount(self) -> None:
        super().on_mount()
        doctor_app(self).data = self.data  # export, and the watch, follow the node shown

    def action_back(self) -> None:
        self.app.pop_screen()
        self.session.host.close()  # the fleet holds one node's bundle at a time, as the fleet run does


def odd_cell(odd: list[tuple[str, str]]) -> str:
    """A setting's odd nodes as markup: the first MAX_ODD_SHOWN, then how many more."""
    shown = "  ".join(f"{esc(n)}=[{ODD_STYLE}]{esc(v)}[/]" for n, v in odd[:MAX_ODD_SHOWN])
    more = len(odd) - MAX_ODD_SHOWN
    return shown + (f"  [$text-muted]+{more} more ({WHOLE})[/]" if more > 0 else "") or "[$text-muted]all agree[/]"


def shown_nodes(fleet: dict) -> tuple[list, str]:
    """The node rows the table holds (at most MAX_NODE_ROWS, the named and unhealthy first) and
    the note saying what was cut ("" when none was)."""
    rows = node_rows(fleet)
    if len(rows) <= MAX_NODE_ROWS:
        return rows, ""
    rows = sorted(rows, key=lambda r: not (r.named_by or r.verdict != HEALTHY))[:MAX_NODE_ROWS]
    return rows, f" (the first {MAX_NODE_ROWS} of {len(node_rows(fleet))}, named and unhealthy first; {WHOLE})"


def first_odd_row(fleet: dict, rows: list | None = None) -> int:
    """The row of the first node the fleet names (affected, else not healthy) among `rows` (the
    fleet's node rows when None); 0 when none is."""
    rows = node_rows(fleet) if rows is None else rows
    affected = set(fleet.get("nodes_affected") or [])
    for pick in (lambda r: r.node in affected, lambda r: r.verdict != HEALTHY):
        found = next((i for i, r in enumerate(rows) if pick(r)), None)
        if found is not None:
            return found
    return 0


class FleetScreen(Screen):
    BINDINGS = [
        Binding("d", "drill", "Node", tooltip="the selected node's own diagnosis (enter does too)"),
        Binding("e", "app.export", "Export", tooltip="export the fleet's diagnosis: choose a format, preview, save, post"),
    ]

    def __init__(self, data: dict, bundles: dict[str, Path], fabric: str = "auto", answers: dict[str, str] | None = None) -> None:
        super().__init__()
        self.data = data
        self.bundles = bundles
        self.fabric = fabric
        self.answers = dict(answers or {})

    def compose(self) -> ComposeResult:
        style = VERDICT_STYLE.get(self.data["verdict"], "b")
        title, _, counts = fleet_title(self.data).partition(" · ")
        where = (self.data.get("context") or {}).get("host") or "fleet"
        yield Static(f"[{style}]{esc(title)}[/]  [$text-muted]{esc(where)} · {esc(counts)}[/]", id="fleet-title")
        yield DataTable(id="fleet-settings", cursor_type="row", zebra_stripes=True)
        yield DataTable(id="fleet-nodes", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        fleet = self.data["fleet"]
        settings = self.query_one("#fleet-settings", DataTable)
        settings.border_title = "Settings: the odd nodes, then the majority"
        rows = []
        for row in setting_rows(fleet):
            rows.append((row.key, [row.key, _cell(odd_cell(row.odd)), row.majority]))
        _add_rows(settings, ("setting", "odd nodes", "majority (nodes)"), rows)
        nodes = self.query_one("#fleet-nodes", DataTable)
        shown, cut = shown_nodes(fleet)
        nodes.border_title = "Nodes: enter shows a node's own diagnosis" + cut
        rows = []
        for row in shown:
            style = VERDICT_STYLE.get(row.verdict, "$text-error b")
            named = f"[{ODD_STYLE}]{esc(', '.join(row.named_by))}[/]" if row.named_by else ""
            rows.append((row.node, [row.node, _cell(f"[{style}]{esc(row.verdict)}[/]"), row.cause, _cell(named)]))
        _add_rows(nodes, ("node", "verdict", "root cause", "odd in"), rows)
        nodes.move_cursor(row=first_odd_row(fleet, shown))  # the first Enter opens the odd one, not a healthy node
        nodes.focus()

    def on_screen_resume(self) -> None:
        doctor_app(self).data = self.data  # back from a node: export and quit are the fleet's again

    # -- drilling into a node ------------------------------------------------------------------
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "fleet-nodes":
            self.drill(str(event.row_key.value))
        else:  # a setting: its first odd node
            row = next(r for r in setting_rows(self.data["fleet"]) if r.key == event.row_key.value)
            if row.odd:
                self.drill(row.odd[0][0])

    def action_drill(self) -> None:
        nodes = self.query_one("#fleet-nodes", DataTable)
        if nodes.row_count:
            self.drill(str(nodes.coordinate_to_cell_key(nodes.cursor_coordinate).row_key.value))

    def drill(self, node: str) -> None:
        if node not in self.bundles:
            why = self.data["fleet"]["nodes_unreachable"].get(node, "no bundle")
            self.notify(f"{node} gave no bundle: {why}", severity="warning")
            return
        if any(w.name == "node" and w.is_running for w in self.workers):
            return
        self.notify(f"Diagnosing {node} from its bundle...")
        self.run_worker(lambda: self._diagnose(node), thread=True, name="node", exit_on_error=False)

    def _diagnose(self, node: str):
        """The node's Session and diagnosis: `diagnose --snapshot BUNDLE` with the fleet's fabric and
        answers, its bundle bounded as the fleet run bounds it (refused over the cap, in one line)."""
        from allreduce_doctor.doctor import Doctor
        from allreduce_doctor.hosts.budget import FLEET_BUNDLE_BYTES, OVER_FLEET_HINT
        from allreduce_doctor.hosts.snapshot import SnapshotHost
        from allreduce_doctor.session import Options, Session

        bundle = str(self.bundles[node])
        options = Options(fabric=self.fabric, answers=dict(self.answers), bundle=bundle)
        host = SnapshotHost(bundle, FLEET_BUNDLE_BYTES, OVER_FLEET_HINT)
        try:
            session = Session(Doctor.load(), host, options)
            return session, session.diagnose().to_dict()
        except BaseException:
            host.close()
            raise

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.name != "node":
            return
        if event.state == WorkerState.SUCCESS:
            session, data = cast(tuple, event.worker.result)  # success: what _diagnose returned
            self.app.push_screen(NodeDiagnosisScreen(session, data))
        elif event.state == WorkerState.ERROR:
            err = event.worker.error
            self.notify(str(err) if isinstance(err, DoctorError) else f"{type(err).__name__}: {err}", severity="error")
