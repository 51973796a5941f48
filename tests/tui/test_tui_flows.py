"""Every key flow of the terminal UI under Textual's Pilot, on the scenario bundles: probe,
walk the tree, answer a question, open the evidence, watch, export, help, quit; the mouse too."""

from __future__ import annotations

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.tui.app import DoctorApp
from allreduce_doctor.tui.dialogs.export_dialog import ExportDialog
from allreduce_doctor.tui.dialogs.help_dialog import HelpDialog
from allreduce_doctor.tui.dialogs.raw_dialog import RawDialog
from allreduce_doctor.tui.screens.diagnosis_screen import DiagnosisScreen
from allreduce_doctor.tui.screens.probing_screen import ProbingScreen
from allreduce_doctor.tui.screens.watch_screen import WatchScreen
from allreduce_doctor.tui.state import export_formats
from allreduce_doctor.tui.widgets.decision_tree import DecisionTree
from tests.tui.helpers import bundle, make_session, opened, run, screen_text, static_text, to_diagnosis, until


def test_probe_then_diagnosis_then_quit_with_the_verdict_exit_code():
    async def go():
        async with opened("roce-pfc-off") as (app, pilot):
            probing = app.screen_stack[-2]
            assert isinstance(probing, ProbingScreen)
            assert "pending" not in probing.states.values() and "running" not in probing.states.values()
            assert probing.states["ethtool_stats"] == "done" and probing.states["qos_dcb_pfc"] == "missing"
            text = screen_text(app)
            assert "FAULT FOUND: pfc_not_enabled (critical, owner network)" in text
            assert "[FAIL] PFC is enabled on some priority" in text
            assert app.screen.query_one(DecisionTree).cursor_node.data.key == "roce.pfc"
            await pilot.press("p")  # back to the probe list, and d returns
            assert isinstance(app.screen, ProbingScreen) and "Probed" in screen_text(app)
            await pilot.press("d")
            await to_diagnosis(app, pilot)
            await pilot.press("q")
        return app.return_code

    assert run(go()) == 1


def test_healthy_quits_with_0_and_an_error_quits_with_2():
    async def healthy():
        async with opened("roce-healthy") as (app, pilot):
            await pilot.press("q")
        return app.return_code

    async def broken():
        session = make_session(bundle("roce-healthy"))

        def observe():
            raise DoctorError("bundle.tar.gz: member files/sys/x is damaged")

        session.observe = observe
        app = DoctorApp(session)
        async with app.run_test() as pilot:
            await until(pilot, lambda: app.error is not None)
            assert "error: bundle.tar.gz: member files/sys/x is damaged  (q quits)" in screen_text(app)
            await pilot.press("q")
        return app.return_code, str(app.error)

    assert run(healthy()) == 0
    assert run(broken()) == (2, "bundle.tar.gz: member files/sys/x is damaged")


def test_bad_input_closes_the_app_at_once_and_run_app_raises_it(monkeypatch):
    """The Session is built in the worker; a bad argument closes the UI with exit 2, and
    run_app raises the error for cli.main to print in one line."""
    from allreduce_doctor.tui import app as app_module

    def make():
        return make_session("no/such.tar.gz")

    async def go():
        app = DoctorApp(make_session=make, what="no/such.tar.gz")
        async with app.run_test() as pilot:
            await until(pilot, lambda: app.error is not None)
        return app.return_code, str(app.error)

    code, error = run(go())
    assert code == 2
    assert error.startswith("no/such.tar.gz: ")

    def fake_run(self):
        self.error = DoctorError(error)
        return 2

    monkeypatch.setattr(app_module.DoctorApp, "run", fake_run)
    try:
        app_module.run_app(make, "no/such.tar.gz")
    except DoctorError as err:
        assert str(err) == error
    else:
        raise AssertionError("run_app did not raise")


def test_app_from_arguments_builds_its_session():
    async def go():
        app = DoctorApp(make_session=lambda: make_session(bundle("ib-port-down")), what=bundle("ib-port-down"))
        async with app.run_test() as pilot:
            await to_diagnosis(app, pilot)
            return app.data["root_cause"]["id"], app.session.options.bundle

    assert run(go()) == ("ib_port_down", bundle("ib-port-down"))


def test_walk_the_tree_expand_a_step_and_see_what_was_not_reached():
    async def go():
        async with opened("roce-pfc-off") as (app, pilot):
            tree = app.screen.query_one(DecisionTree)
            await pilot.press("up")
            assert tree.cursor_node.data.key == "roce.gid_index"
            assert static_text(app.screen.query_one("#detail")).startswith(
                "[pass] NCCL's GID index points at a routable RoCE v2 entry\nroce.gid_index · check")
            await pilot.press("down", "enter")  # expand roce.pfc: its outcomes appear under it
            labels = [str(c.label) for c in tree.cursor_node.children]
            assert labels == ["[FAIL] yes (taken) -> cause: pfc_not_enabled",
                              "[ -- ] no -> NCCL's traffic lands on a PFC-protected priority",
                              "[ -- ] unknown -> NCCL's traffic lands on a PFC-protected priority"]
            await pilot.press("down", "down")
            assert tree.cursor_node.data.key == "roce.traffic_class"
            assert "Not reached: the walk did not come here." in static_text(app.screen.query_one("#detail"))
            await pilot.press("c")  # collapse back to the path
            assert not tree.find("roce.pfc").is_expanded

    run(go())


def test_answer_a_question_in_place_and_the_walk_continues():
    async def go():
        async with opened("ib-healthy") as (app, pilot):
            screen = app.screen
            assert screen.selected == "ib.scale"
            await pilot.press("a")  # focus the first answer: two_nodes
            assert app.focused.name == "two_nodes"
            await pilot.press("enter")
            await pilot.pause()
            assert app.session.options.answers == {"validated_scale": "two_nodes"}
            assert app.data["healthy"]["node"] == "ib.validate_at_scale"
            assert "[pass] At what scale was the fabric validated?" in screen_text(app)
            await pilot.press("a", "right", "right", "enter")  # skip
            await pilot.pause()
            assert app.session.options.answers == {} and app.data["unanswered"][0]["node"] == "ib.scale"

    run(go())


def test_answer_with_the_mouse():
    async def go():
        async with opened("roce-healthy") as (app, pilot):
            button = next(b for b in app.screen.query("#answers Button") if b.name == "full_job")
            await pilot.click(button)
            await pilot.pause()
            assert app.session.options.answers == {"validated_scale": "full_job"}
            assert app.data["healthy"]["node"] == "roce.healthy"

    run(go())


def test_click_a_step_shows_it():
    async def go():
        async with opened("roce-pfc-off") as (app, pilot):
            tree = app.screen.query_one(DecisionTree)
            node = tree.find("roce.mtu")
            await pilot.click(tree, offset=(5, node.line - tree.scroll_offset.y + 1))  # +1: the border
            await pilot.pause()
            assert app.screen.selected == "roce.mtu"

    run(go())


def test_raw_value_of_the_deciding_evidence():
    async def go():
        async with opened("roce-pfc-off") as (app, pilot):
            await pilot.press("r")
            assert isinstance(app.screen, RawDialog)
            assert [o.fact for o in app.screen.observations] == ["roce.priority"]
            text = screen_text(app)
            assert "roce.priority [ok]  probe roce_priority" in text
            assert '"buffer_known": true,' in text  # the full value, every port, not the short form
            await pilot.press("escape")
            assert isinstance(app.screen, DiagnosisScreen)

    run(go())


def test_watch_replays_a_bundle_and_calls_out_the_signature():
    async def go():
        async with opened("roce-packet-loss") as (app, pilot):
            await pilot.press("w")
            watch = app.screen
            assert isinstance(watch, WatchScreen)
            await until(pilot, lambda: watch.watch_data.intervals == 1)
            assert static_text(watch.query_one("#watch-title")) == \
                "Watch gpu-node-017 (bundle .../roce-packet-loss/bundle.tar.gz) · 1 interval recorded"
            text = screen_text(app)
            assert "LOSS on enp77s0np0: retransmission counters climbing (OOS 4.8k/s, retrans 320/s, discard 5.1k/s)" in text
            assert watch.query_one("#ports").row_count == 8
            await pilot.press("down", "down")
            assert watch.selected == "mlx5_2/1" and "History of enp77s0np0 (1 point)" in screen_text(app)
            await pilot.press("space")  # a bundle has nothing to pause
            await pilot.press("escape")
            assert isinstance(app.screen, DiagnosisScreen)

    run(go())


def test_export_choose_a_format_preview_and_save(tmp_path):
    about, render = export_formats()
    formats = list(about)

    async def go():
        async with opened("roce-pfc-off") as (app, pilot):
            await pilot.press("e")
            dialog = app.screen
            assert isinstance(dialog, ExportDialog)
            assert dialog.fmt == formats[0]
            await pilot.press("down", "enter")  # the second format
            assert dialog.fmt == formats[1]
            path = dialog.query_one("#export-path")
            assert path.value.startswith("allreduce-doctor-gpu-node-017-pfc_not_enabled.")
            path.value = str(tmp_path / "ticket.out")
            await pilot.press("ctrl+s")
            status = static_text(dialog.query_one("#export-status"))
            assert status.startswith("saved ") and status.endswith(f"bytes to {tmp_path / 'ticket.out'}")
            await pilot.press("escape")
            return app.data

    data = run(go())
    assert (tmp_path / "ticket.out").read_text() == render(data, formats[1])


def test_export_to_a_directory_says_why_it_cannot(tmp_path):
    async def go():
        async with opened("roce-pfc-off") as (app, pilot):
            await pilot.press("e")
            app.screen.query_one("#export-path").value = str(tmp_path)
            await pilot.click("#export-save")
            return static_text(app.screen.query_one("#export-status"))

    assert run(go()) == f"cannot write {tmp_path}: Is a directory"


def test_help_lists_every_key_and_t_switches_theme():
    from allreduce_doctor.tui.dialogs.help_dialog import key_sections

    async def go():
        async with opened("roce-pfc-off", size=(100, 50)) as (app, pilot):
            await pilot.press("question_mark")
            assert isinstance(app.screen, HelpDialog)
            shown = [(static_text(row.query_one(".help-key")), static_text(row.query_one(".help-what")))
                     for row in app.screen.query(".help-row")]
            titles = [static_text(t) for t in app.screen.query(".help-title")]
            await pilot.press("escape", "t")
            return shown, titles, app.current_theme.dark

    shown, titles, dark = run(go())
    assert titles == [title for title, _ in key_sections()]
    assert shown == [row for _, rows in key_sections() for row in rows]
    assert ("a", "answer the selected question, or go to the first open one") in dict(key_sections())["Diagnosis screen"]
    assert dark is False


def test_watch_command_screen_on_a_bundle():
    from allreduce_doctor.doctor import load_catalogue
    from allreduce_doctor.hosts.snapshot import SnapshotHost

    async def go():
        app = DoctorApp(watch=(load_catalogue(), SnapshotHost(bundle("roce-pause-storm")), 1.0, "gpu-node-017"))
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, WatchScreen) and app.screen.watch_data.intervals == 1)
            text = static_text(app.screen.query_one("#signatures"))
            await pilot.press("escape")  # nothing under it: stays
            assert isinstance(app.screen, WatchScreen)
            await pilot.press("q")
        return text, app.return_code

    text, code = run(go())
    assert text == "PAUSE CASCADE on enp26s0np0 (+7 more ports): 830.2k pause frames/s (pause-storm events) while nothing drops"
    assert code == 0


def test_watch_on_a_host_without_rdma_stops_and_says_so():
    from allreduce_doctor.doctor import load_catalogue
    from allreduce_doctor.tui.watch_model import NO_PORTS
    from tests.scenarios.fakehost import FakeHost

    async def go():
        app = DoctorApp(watch=(load_catalogue(), FakeHost(), 0.1, "fake-node (live)"))
        async with app.run_test() as pilot:
            await until(pilot, lambda: isinstance(app.screen, WatchScreen) and app.screen.watch_data.intervals == 1)
            await until(pilot, lambda: not app.screen.workers)  # the sampling loop ended
            return static_text(app.screen.query_one("#signatures")), static_text(app.screen.query_one("#watch-title"))

    assert run(go()) == (NO_PORTS, "Watch fake-node (live) · every 0.1s")
