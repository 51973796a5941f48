"""Keys and forms that say what they do (issue 14 item 12), under Pilot: `a` from anywhere
focuses the answers, the export preview follows the cursor and marks the chosen format in
text, help never runs a key into its description, the post form speaks its own field names."""

from __future__ import annotations

import re

from allreduce_doctor.tui.dialogs.export_dialog import ExportDialog
from allreduce_doctor.tui.dialogs.help_dialog import key_sections
from allreduce_doctor.tui.state import export_formats
from allreduce_doctor.tui.widgets.decision_tree import DecisionTree
from tests.export.conftest import clean_env, tracker  # noqa: F401 - no token of the person running the tests
from tests.tui.helpers import opened, run, screen_text, static_text, until


def test_a_away_from_the_question_focuses_its_answers():
    async def go():
        async with opened("ib-healthy") as (app, pilot):
            await pilot.press("up", "up")  # off the question, onto a check
            away = app.screen.selected
            await pilot.press("a")
            await pilot.pause()
            return away, app.screen.selected, app.focused.name, app.screen.query_one(DecisionTree).cursor_node.data.key

    away, selected, focused, cursor = run(go())
    assert away != "ib.scale"
    assert (selected, focused, cursor) == ("ib.scale", "two_nodes", "ib.scale")


def test_the_export_preview_follows_the_cursor_and_marks_the_format_in_text():
    about, render = export_formats()
    formats = list(about)

    async def go():
        async with opened("roce-pfc-off") as (app, pilot):
            await pilot.press("e", "down")  # the cursor alone, no enter
            dialog = app.screen
            assert isinstance(dialog, ExportDialog)
            return (app.data, dialog.fmt, static_text(dialog.query_one("#preview")),
                    static_text(dialog.query_one("#format-about")), screen_text(app))

    data, fmt, preview, about_line, text = run(go())
    assert fmt == formats[1]
    assert preview == render(data, formats[1])
    assert about_line == f"format {formats[1]} ({about[formats[1]]})"
    shown = re.findall(r"▊ (> |  )(\S+) +▎", text)  # the format list's rows, as on screen
    assert shown == [("> " if f == formats[1] else "  ", f) for f in formats]  # ">" marks it, not colour alone


def test_help_never_runs_a_key_into_its_description():
    async def go():
        async with opened("roce-pfc-off", size=(110, 120)) as (app, pilot):
            await pilot.press("question_mark")
            await pilot.pause()
            return screen_text(app)

    text = run(go())
    rows = [row for _, rows in key_sections() for row in rows]
    assert ("up / down", "choose the format: the preview follows, > marks it") in rows
    for keys, what in rows:  # the key, at least one space, then its description's first word
        assert re.search(re.escape(keys) + r" +" + re.escape(what.split()[0]), text), (keys, what)
    assert "enterchoose" not in text


def test_post_form_errors_name_the_form_fields_not_cli_flags(tracker, monkeypatch):
    from tests.tui.test_tui_post import TOKEN, _post_form

    monkeypatch.setenv("GH_TOKEN", TOKEN)  # so the base URL is checked (the token comes first)

    async def go():
        async with opened("roce-pfc-off") as (app, pilot):
            dialog = await _post_form(app, pilot, "github", "acme", tracker.url)  # not OWNER/REPO
            bad_repo = static_text(dialog.query_one("#post-status"))
            dialog.query_one("#post-where").value = "acme/gpu-incidents"
            dialog.query_one("#post-base-url").value = "ftp://tracker"
            await pilot.press("ctrl+s")
            await until(pilot, lambda: not static_text(dialog.query_one("#post-status")).startswith("posting"))
            return bad_repo, static_text(dialog.query_one("#post-status"))

    assert run(go()) == ("repository acme: expected OWNER/REPO",
                         "base URL ftp://tracker: expected a URL such as https://jira.example.com")


def test_form_words_cover_every_flag_the_poster_names():
    from allreduce_doctor.tui.dialogs.post_dialog import form_words

    assert form_words("--post jira needs a project key: --project KEY, or project in [jira] of t.toml") == \
        "jira needs a project key: the project field, or project in [jira] of t.toml"
    assert form_words("--post jira needs the Jira base URL: --base-url https://example.atlassian.net, or base_url in "
                      "[jira] of t.toml") == "jira needs the Jira base URL: the base URL field, or base_url in [jira] of t.toml"
    assert form_words("--post jira (Cloud) needs the account email: --jira-email, JIRA_EMAIL, or email in [jira] of "
                      "t.toml") == "jira (Cloud) needs the account email: JIRA_EMAIL, or email in [jira] of t.toml"
