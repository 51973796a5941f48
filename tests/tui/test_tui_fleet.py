"""The fleet screen: `allreduce-doctor fleet --snapshots DIR --tui` on the first fleet of
tests/fleet/scenarios.yaml (PFC off on gpu01, another NCCL_IB_GID_INDEX on gpu02), the settings
by node, and enter drilling into a node's own diagnosis on the diagnosis screen."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
import yaml

from allreduce_doctor.cli import main
from allreduce_doctor.tui.app import DoctorApp
from allreduce_doctor.tui.dialogs.export_dialog import ExportDialog
from allreduce_doctor.tui.fleet_model import fleet_title, node_rows, setting_rows
from allreduce_doctor.tui.screens.fleet_screen import FleetScreen, NodeDiagnosisScreen
from tests.fleet.conftest import doctor, lay_out
from tests.tui.helpers import check_golden, run, screen_text, static_text, to_diagnosis, until

FLEETS = Path(__file__).resolve().parents[1] / "fleet"
FIRST = yaml.safe_load((FLEETS / "scenarios.yaml").read_text())[0]


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def fleet_dir(tmp_path):
    """DIR/NODE.tar.gz for the first fleet, as test_fleet_snapshots.py lays it out."""
    nodes = {node: FLEETS / b if b.endswith(".tar.gz") else b for node, b in FIRST["nodes"].items()}
    return lay_out(tmp_path / "incident", nodes)


@pytest.fixture
def fleet(fleet_dir, monkeypatch):
    """What `fleet --snapshots DIR --tui` hands the terminal UI (the real command, the app stubbed)."""
    handed = []
    monkeypatch.setattr("allreduce_doctor.tui.app.run_fleet", lambda *args: handed.append(args) or 0)
    monkeypatch.setattr(sys, "stdin", Tty())
    monkeypatch.setattr(sys, "stdout", Tty())
    assert main(["fleet", "--snapshots", str(fleet_dir), "--tui", "--answer", "validated_scale=full_job"]) == 0
    return handed[0]


def test_the_command_hands_the_fleet_and_its_bundles_to_the_ui(fleet, fleet_dir):
    data, bundles, fabric, answers = fleet
    assert data["root_cause"]["id"] == FIRST["cause"] == "setting_mismatch"
    assert bundles == {node: fleet_dir / f"{node}.tar.gz" for node in ("gpu01", "gpu02", "gpu03", "gpu04")}
    assert (fabric, answers) == ("auto", {"validated_scale": "full_job"})


def test_tui_needs_a_terminal_and_no_report_options(fleet_dir):
    proc = doctor("fleet", "--snapshots", str(fleet_dir), "--tui")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("allreduce-doctor: error: --tui needs a terminal on stdin and stdout; "
                           "without --tui the fleet report is printed\n")
    proc = doctor("fleet", "--snapshots", str(fleet_dir), "--tui", "--format", "json")
    assert proc.stderr == "allreduce-doctor: error: --tui shows the fleet in the terminal; drop --format, --output and --export\n"


def test_fleet_rows_put_the_odd_settings_first(fleet):
    data = fleet[0]
    rows = setting_rows(data["fleet"])
    assert [(r.key, r.majority, r.odd) for r in rows[:3]] == [
        ("pfc_priorities", "[3] (3/4)", [("gpu01", "enp155s0np0=[]")]),
        ("nccl_env.NCCL_IB_GID_INDEX", '"3" (3/4)', [("gpu02", '"5"')]),
        ("fabric", '"roce" (4/4)', []),
    ]
    assert len(rows) == len(data["fleet"]["settings"])
    assert [(r.node, r.verdict, r.cause, r.named_by) for r in node_rows(data["fleet"])] == [
        ("gpu01", "fault", "pfc_not_enabled", ["pfc_priorities"]),
        ("gpu02", "fault", "wrong_gid_index", ["nccl_env.NCCL_IB_GID_INDEX"]),
        ("gpu03", "healthy", "", []), ("gpu04", "healthy", "", [])]
    assert fleet_title(data) == "FAULT FOUND: setting_mismatch · 4 nodes checked, 2 affected"


def test_fleet_screen_golden(fleet):
    async def go():
        app = DoctorApp(fleet=fleet)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, FleetScreen))
            await pilot.pause()
            check_golden(app, "fleet")

    run(go())


def test_enter_drills_into_a_node_and_esc_comes_back(fleet):
    async def go():
        app = DoctorApp(fleet=fleet)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, FleetScreen))
            fleet_screen = app.screen
            assert "gpu01=enp155s0np0=[]" in screen_text(app)
            await pilot.press("down", "enter")  # gpu02: another GID index
            await to_diagnosis(app, pilot)
            node = app.screen
            assert isinstance(node, NodeDiagnosisScreen)
            seen = node.data["root_cause"]["id"], app.data is node.data, static_text(node.query_one("#verdict"))
            assert node.session.options.answers == {"validated_scale": "full_job"}
            await pilot.press("escape")
            assert app.screen is fleet_screen and app.data is fleet[0]
            assert node.session.host._bundle._members == {}  # let go: one node's bundle held at a time
            await pilot.press("up", "d")  # gpu01, with d this time
            await to_diagnosis(app, pilot)
            second = app.screen.data["root_cause"]["id"]
            await pilot.press("e")  # the node's diagnosis is what is exported
            exported = app.screen.data["root_cause"]["id"] if isinstance(app.screen, ExportDialog) else None
            await pilot.press("escape", "escape", "e")
            fleet_export = app.screen.data["root_cause"]["id"] if isinstance(app.screen, ExportDialog) else None
            await pilot.press("escape", "q")
        return seen, second, exported, fleet_export, app.return_code

    seen, second, exported, fleet_export, code = run(go())
    assert seen[:2] == ("wrong_gid_index", True)
    assert seen[2].startswith("FAULT FOUND: wrong_gid_index (critical, owner ")
    assert (second, exported, fleet_export) == ("pfc_not_enabled", "pfc_not_enabled", "setting_mismatch")
    assert code == 1  # the fleet's verdict


def test_enter_on_a_setting_opens_its_first_odd_node(fleet):
    async def go():
        app = DoctorApp(fleet=fleet)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, FleetScreen))
            app.screen.query_one("#fleet-settings").focus()
            await pilot.press("down", "enter")  # nccl_env.NCCL_IB_GID_INDEX: gpu02
            await to_diagnosis(app, pilot)
            return app.screen.data["root_cause"]["id"]

    assert run(go()) == "wrong_gid_index"


def test_a_node_bundle_over_the_fleet_cap_is_refused_in_one_line(fleet, monkeypatch):
    from allreduce_doctor.errors import BundleError
    from allreduce_doctor.hosts import budget

    monkeypatch.setattr(budget, "FLEET_BUNDLE_BYTES", 1 << 10)
    bundle = fleet[1]["gpu01"]
    with pytest.raises(BundleError) as err:
        FleetScreen(*fleet)._diagnose("gpu01")
    assert str(err.value) == (f"{bundle}: members total over the 1024 bytes limit for a bundle; refusing to read it"
                              " in a fleet; diagnose it alone with `diagnose --snapshot`")


def _big_fleet(nodes: int, odd: int) -> dict:
    """`nodes` nodes, the last `odd` of them with PFC off (named by the setting, at fault)."""
    bad = range(nodes - odd, nodes)
    per_node = {f"n{i:04d}": {"verdict": "fault" if i in bad else "healthy", "root_cause": "pfc_not_enabled" if i in bad else None}
                for i in range(nodes)}
    setting = {"key": "pfc_priorities", "majority": [3], "majority_nodes": nodes - odd, "nodes": nodes,
               "odd": {f"n{i:04d}": [] for i in bad}}
    return {"settings": [setting], "outliers": [], "per_node": per_node, "nodes_unreachable": {}}


def test_a_big_fleet_is_shown_within_caps_and_says_what_was_left_out():
    from allreduce_doctor.tui.screens.fleet_screen import MAX_NODE_ROWS, MAX_ODD_SHOWN, odd_cell, shown_nodes

    fleet = _big_fleet(MAX_NODE_ROWS + 500, MAX_ODD_SHOWN + 3)
    cell = odd_cell(setting_rows(fleet)[0].odd)
    assert cell.count("=[") == MAX_ODD_SHOWN and cell.endswith("+3 more (all in `fleet --format json`)[/]")
    rows, cut = shown_nodes(fleet)
    assert len(rows) == MAX_NODE_ROWS  # the odd nodes (last in the fleet) first, then the others in order
    assert [r.node for r in rows[:MAX_ODD_SHOWN + 4]] == [f"n{i:04d}" for i in range(MAX_NODE_ROWS + 489, MAX_NODE_ROWS + 500)] + ["n0000"]
    assert cut == (f" (the first {MAX_NODE_ROWS} of {MAX_NODE_ROWS + 500}, named and unhealthy first; "
                   "all in `fleet --format json`)")
    small = _big_fleet(4, 1)
    assert shown_nodes(small) == (node_rows(small), "") and odd_cell([]) == "[$text-muted]all agree[/]"
