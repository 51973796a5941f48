"""The terminal UI says what the reports say: n.a. badges, no rate cut at the table's edge, the
fleet's first Enter on the odd node (Pilot tests)."""

from __future__ import annotations

import json

from allreduce_doctor.cli import main
from allreduce_doctor.doctor import Doctor, load_catalogue
from allreduce_doctor.hosts.snapshot import SnapshotHost
from allreduce_doctor.tui.app import DoctorApp
from allreduce_doctor.tui.screens.fleet_screen import FleetScreen, NodeDiagnosisScreen, first_odd_row
from allreduce_doctor.tui.screens.watch_screen import WatchScreen
from allreduce_doctor.tui.tree_model import BADGES, NA, DiagnosisModel
from tests.fleet.conftest import lay_out
from tests.scenarios import nodes as N
from tests.scenarios.build import record
from tests.tui.helpers import bundle, run, screen_text, to_diagnosis, until


def test_watch_at_120_columns_shows_whole_rates():
    async def go():
        app = DoctorApp(watch=(load_catalogue(), SnapshotHost(bundle("roce-pause-storm")), 1.0, "gpu-node-017"))
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, WatchScreen) and app.screen.watch_data.intervals == 1)
            return screen_text(app)

    rows = [line for line in run(go()).splitlines() if line.startswith("mlx5_0/1")]
    assert rows and rows[0].split()[-2:] == ["41.0k", "0"]  # xmit_wait/s whole, and the last column on screen


def test_a_node_without_gpus_or_rdma_shows_na_badges(tmp_path, capsys):
    record(N.Node(ports=0, gpus=0), tmp_path / "cpu.tar.gz")
    assert main(["diagnose", "--snapshot", str(tmp_path / "cpu.tar.gz"), "--format", "json"]) == 4
    model = DiagnosisModel(Doctor.load().runbooks, json.loads(capsys.readouterr().out))
    assert [model.status(k) for k in ("trunk.rdma_present", "trunk.gpus_without_rdma", "trunk.no_rdma")] == [NA] * 3
    assert model.badge("trunk.rdma_present") == BADGES[NA] == "n.a."


def test_the_fleets_first_enter_opens_the_odd_node(tmp_path):
    folder = lay_out(tmp_path / "f", {"gpu01": "roce-healthy", "gpu02": "roce-healthy", "gpu03": "roce-pfc-off"})
    from allreduce_doctor.fleet.analyze import analyze
    from allreduce_doctor.fleet.fleet_diagnosis import fleet_diagnosis

    bundles = {n: folder / f"{n}.tar.gz" for n in ("gpu01", "gpu02", "gpu03")}
    results, digests = analyze(bundles)
    data = fleet_diagnosis(results, {}, digests)
    assert first_odd_row(data["fleet"]) == 2

    async def go():
        app = DoctorApp(fleet=(data, bundles, "auto", {}))
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, FleetScreen))
            await pilot.press("enter")
            await to_diagnosis(app, pilot)
            assert isinstance(app.screen, NodeDiagnosisScreen)
            return app.screen.data["root_cause"]["id"]

    assert run(go()) == "pfc_not_enabled"
