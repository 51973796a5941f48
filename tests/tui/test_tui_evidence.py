"""Pasted evidence in the terminal UI (issue 12 items 3-4), under Pilot: the ranked candidates
with their confidence, lines for and against and the next step; a paste added in a dialog
re-runs the evidence diagnosis with every source together; the symptom question re-ranks."""

from __future__ import annotations

from allreduce_doctor.evidence import NOTHING
from allreduce_doctor.tui.dialogs.paste_dialog import PasteDialog
from allreduce_doctor.tui.dialogs.symptom_dialog import SymptomDialog
from allreduce_doctor.tui.screens.diagnosis_screen import DiagnosisScreen
from tests.evidence.test_differential import RETRY, P
from tests.tui.helpers import opened, run, screen_text, static_text, until

GIDS = (f"{P}NCCL INFO NCCL_IB_GID_INDEX set by environment to 1.\n"
        "DEV     PORT    INDEX   GID                                     IPv4            VER     DEV\n"
        "---     ----    -----   ---                                     ------------    ---     ---\n"
        "mlx5_0  1       0       fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8                 v1      ens1f0\n"
        "mlx5_0  1       1       fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8                 v2      ens1f0\n"
        "mlx5_0  1       2       0000:0000:0000:0000:0000:ffff:ac13:003c 172.19.0.60     v1      ens1f0\n"
        "mlx5_0  1       3       0000:0000:0000:0000:0000:ffff:ac13:003c 172.19.0.60     v2      ens1f0\n"
        "n_gids_found=4\n")
NO_DEVICE = (f"{P}NCCL INFO NET/IB : No device found.\n"
             f"{P}include/socket.h:390 NCCL WARN Connect to 10.0.0.2<45763> failed : Connection refused\n")


def paste_session(tmp_path, text: str):
    """The Session `allreduce-doctor --evidence paste.txt` opens in the UI."""
    from allreduce_doctor.cli import build_parser
    from allreduce_doctor.commands.diagnose import session_from_args

    path = tmp_path / "paste.txt"
    path.write_text(text)
    return session_from_args(build_parser().parse_args(["diagnose", "--evidence", str(path)]), interactive=True)


def cause_text(app) -> str:
    return static_text(app.screen.query_one("#cause"))


def candidates(app) -> list[str]:
    return [line for line in cause_text(app).splitlines() if line[:1].isdigit()]


def test_a_paste_shows_its_ranked_candidates(tmp_path):
    async def go():
        async with opened("", session=paste_session(tmp_path, RETRY)) as (app, pilot):
            return cause_text(app), candidates(app)

    text, ranked = run(go())
    assert text.startswith("symptom not said (s: change it)  ·  v: add a paste\nwrong_gid_index  ")
    assert ranked == ["1. wrong_gid_index (medium confidence): NCCL uses a GID that does not route (link-local, RoCE v1 or absent)",
                      "2. mtu_mismatch (low confidence): path or endpoint MTUs disagree, or the active MTU is too low",
                      "3. fabric_unreachable (low confidence): some NIC pairs cannot reach each other at all"]
    first = text.split("\n1. ", 1)[1].split("\n2. ", 1)[0].splitlines()
    assert first[1] == (f"   for:     {tmp_path}/paste.txt:2: transport/net_ib.cc NET/IB : Got completion from peer "
                        "10.0.0.2<45123> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1 "
                        "remoteGids::ffff:10.0.0.2")
    assert first[-1] == "   next:    paste `show_gids` of both hosts and the job's NCCL_IB_GID_INDEX"
    assert "Secondary findings\nnone" in text  # the candidates are not listed twice


async def _add(app, pilot, text: str) -> PasteDialog:
    await pilot.press("v")
    dialog = app.screen
    assert isinstance(dialog, PasteDialog)
    dialog.query_one("#paste-text").text = text
    await pilot.press("ctrl+s")
    await until(pilot, lambda: app.screen is not dialog  # closed with the new diagnosis, or an error shown
                or not static_text(dialog.query_one("#paste-status")).startswith("reading"))
    await pilot.pause()
    return dialog


def test_a_paste_added_in_the_dialog_re_runs_the_diagnosis_with_every_source(tmp_path):
    async def go():
        async with opened("", session=paste_session(tmp_path, RETRY)) as (app, pilot):
            first = app.session
            await _add(app, pilot, GIDS)
            assert isinstance(app.screen, DiagnosisScreen) and app.session is not first
            after = app.data["verdict"], candidates(app)[0], static_text(app.screen.query_one("#verdict"))
            files = [f["file"] for f in app.session.options.evidence_report["files"]]
            await _add(app, pilot, f"{P}NCCL INFO NCCL_IB_TC set by environment to 106.\n")  # a third: all kept
            await pilot.press("p", "d")  # the probe list and back: the diagnosis with the pastes, not the first
            await until(pilot, lambda: isinstance(app.screen, DiagnosisScreen))
            return after, files, [f["file"] for f in app.screen.session.options.evidence_report["files"]], \
                app.screen.data["verdict"]

    (verdict, first, headline), files, files3, verdict3 = run(go())
    assert verdict == "fault" and headline.startswith("FAULT FOUND: wrong_gid_index")
    assert first == "1. wrong_gid_index (high confidence): NCCL uses a GID that does not route (link-local, RoCE v1 or absent)"
    assert files[0] == str(tmp_path / "paste.txt") and files[1].endswith("/pasted-1.txt")
    assert len(files3) == 3 and files3[2].endswith("/pasted-2.txt") and verdict3 == "fault"


def test_a_paste_with_no_signal_says_so_in_the_dialog_and_keeps_the_text(tmp_path):
    async def go():
        async with opened("", session=paste_session(tmp_path, RETRY)) as (app, pilot):
            first = app.session
            dialog = await _add(app, pilot, "hello, the job is broken\n")
            return (app.screen is dialog, static_text(dialog.query_one("#paste-status")),
                    dialog.query_one("#paste-text").text, app.session is first)

    still_open, status, text, same = run(go())
    assert still_open and same and text == "hello, the job is broken\n"
    assert status.endswith(f"/pasted-1.txt: {NOTHING}")


def test_the_symptom_question_re_ranks_the_candidates(tmp_path):
    async def go():
        async with opened("", session=paste_session(tmp_path, NO_DEVICE)) as (app, pilot):
            before = [f["cause"] for f in app.data["findings"]]
            await pilot.press("s")
            assert isinstance(app.screen, SymptomDialog) and app.focused.name == "not said"
            await pilot.press("left", "left", "left", "enter")  # not said -> error -> crash -> slow
            await pilot.pause()
            return before, [f["cause"] for f in app.data["findings"]], app.session.options.symptom, cause_text(app)

    before, after, symptom, text = run(go())
    assert before == ["wrong_socket_ifname", "container_network_isolation", "container_missing_ib_devices"]
    assert after == ["wrong_socket_ifname", "container_missing_ib_devices", "container_network_isolation"]
    assert symptom == "slow" and text.startswith("symptom slow (s: change it)")


def test_a_nodes_diagnosis_has_no_symptom_key():
    async def go():
        async with opened("roce-pfc-off") as (app, pilot):
            await pilot.press("s")
            return isinstance(app.screen, DiagnosisScreen), screen_text(app).splitlines()[-1]

    still, footer = run(go())
    assert still and "v Add paste" in footer and "Symptom" not in footer


def test_the_first_screen_names_the_paste_it_reads(tmp_path, monkeypatch):
    from allreduce_doctor.cli import build_parser
    from allreduce_doctor.commands import diagnose
    from allreduce_doctor.tui import app as app_module

    seen = []
    monkeypatch.setattr(diagnose, "_wants_tui", lambda args: True)
    monkeypatch.setattr(app_module, "run_app", lambda make, what: seen.append(what) or 0)
    paste = tmp_path / "paste.txt"
    paste.write_text(RETRY)
    assert diagnose.run(build_parser().parse_args(["diagnose", "--evidence", str(paste)])) == 0
    assert seen == [str(paste)]  # "Loading ... to read PASTE", not "this node"
