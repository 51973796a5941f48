"""Posting from the export dialog: the form fills `export --post`'s arguments and post_ticket runs
in a thread worker, against a recording tracker on 127.0.0.1 (tests/export/fakeserver.py)."""

from __future__ import annotations

from allreduce_doctor.export.markdown import render_github
from allreduce_doctor.export.ticket import build_ticket
from allreduce_doctor.tui.dialogs.post_dialog import PostDialog, post_args

# The export tests' fixtures: the recording tracker on 127.0.0.1, and no token, proxy or
# tickets.toml of the person running the tests (autouse here too).
from tests.export.conftest import clean_env, tracker  # noqa: F401
from tests.tui.helpers import opened, run, screen_text, static_text, until

TOKEN = "ghp_" + "Tu1T0kenTu1T0kenTu1T0kenTu1T0kenTu1T"
REPO = "/repos/acme/gpu-incidents"


async def _post_form(app, pilot, target: str, where: str, base_url: str) -> PostDialog:
    await pilot.press("e", "ctrl+p")
    dialog = app.screen
    assert isinstance(dialog, PostDialog)
    if target == "jira":
        await pilot.click("#post-target RadioButton:last-of-type")
    dialog.query_one("#post-where").value = where
    dialog.query_one("#post-base-url").value = base_url
    await pilot.press("ctrl+s")
    await until(pilot, lambda: not static_text(dialog.query_one("#post-status")).startswith("posting"))
    return dialog


def test_post_to_github_creates_the_issue_and_shows_its_url(tracker, monkeypatch):
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    tracker.route("GET", f"{REPO}/issues", 200, [])
    tracker.route("POST", f"{REPO}/issues", 201, {"number": 12, "html_url": "https://github.com/acme/gpu-incidents/issues/12"})

    async def go():
        async with opened("roce-pfc-off", size=(100, 30)) as (app, pilot):
            dialog = await _post_form(app, pilot, "github", "acme/gpu-incidents", tracker.url)
            return app.data, static_text(dialog.query_one("#post-status")), screen_text(app)

    data, status, text = run(go())
    ticket = build_ticket(data)
    assert status == ("https://github.com/acme/gpu-incidents/issues/12 "
                      f"(filed issue #12 with fingerprint {ticket.fingerprint})")
    assert TOKEN not in text
    assert tracker.calls() == [("GET", f"{REPO}/issues"), ("POST", f"{REPO}/issues")]
    search, create = tracker.requests
    assert search.query["labels"] == ticket.fingerprint
    assert create.headers["authorization"] == f"Bearer {TOKEN}"
    assert create.json == {"title": ticket.title, "labels": ["allreduce-doctor", "pfc_not_enabled", ticket.fingerprint],
                           "body": render_github(ticket)}


def test_post_without_a_token_shows_the_one_line_error(tracker):
    async def go():
        async with opened("roce-pfc-off") as (app, pilot):
            dialog = await _post_form(app, pilot, "github", "acme/gpu-incidents", tracker.url)
            return static_text(dialog.query_one("#post-status"))

    assert run(go()) == ("github: no token: set GH_TOKEN or GITHUB_TOKEN "
                         "(a token that may create issues in acme/gpu-incidents)")
    assert tracker.requests == []


def test_post_to_jira_datacenter_files_the_ticket(tracker, monkeypatch):
    monkeypatch.setenv("JIRA_PAT", TOKEN)
    tracker.route("GET", "/rest/api/2/search", 200, {"issues": []})
    tracker.route("POST", "/rest/api/2/issue", 201, {"key": "NET-7", "id": "1007"})
    tracker.route("POST", "/rest/api/2/issue/NET-7/attachments", 200, [{"id": "1"}])

    async def go():
        async with opened("roce-pfc-off", size=(100, 30)) as (app, pilot):
            dialog = await _post_form(app, pilot, "jira", "NET", tracker.url)
            return app.data, static_text(dialog.query_one("#post-status")), screen_text(app)

    data, status, text = run(go())
    assert TOKEN not in text
    ticket = build_ticket(data)
    assert tracker.calls() == [("GET", "/rest/api/2/search"), ("POST", "/rest/api/2/issue"),
                               ("POST", "/rest/api/2/issue/NET-7/attachments")]
    create = tracker.requests[1]
    assert create.headers["authorization"] == f"Bearer {TOKEN}"
    assert create.json["fields"]["project"] == {"key": "NET"}
    assert create.json["fields"]["summary"] == ticket.title
    assert b'filename="bundle.tar.gz"' in tracker.requests[2].body  # the diagnosed bundle, as the command attaches it
    assert status == f"{tracker.url}/browse/NET-7 (filed NET-7 with fingerprint {ticket.fingerprint}; attached bundle.tar.gz)"


def test_form_defaults_come_from_the_tickets_config(tmp_path):
    (tmp_path / "config" / "allreduce-doctor").mkdir(parents=True)
    (tmp_path / "config" / "allreduce-doctor" / "tickets.toml").write_text(
        '[github]\nrepo = "acme/fabric"\n[jira]\nproject = "NET"\nbase_url = "https://jira.acme.com"\n')

    async def go():
        async with opened("roce-pfc-off") as (app, pilot):
            await pilot.press("e", "ctrl+p")
            dialog = app.screen
            first = dialog.query_one("#post-where").value, dialog.query_one("#post-base-url").value
            await pilot.click("#post-target RadioButton:last-of-type")
            second = dialog.query_one("#post-where").value, dialog.query_one("#post-base-url").value
            return first, second, dialog.target

    assert run(go()) == (("acme/fabric", ""), ("NET", "https://jira.acme.com"), "jira")


def test_post_args_is_the_export_namespace():
    args = post_args("jira", "NET", "")
    assert (args.post, args.project, args.repo, args.base_url, args.to, args.no_attach) == ("jira", "NET", None, None, None, False)
