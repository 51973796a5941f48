"""Post: file the diagnosis as a GitHub issue or a Jira ticket, from a small form.

The form fills `export --post`'s arguments (target, repository or project, base URL; defaults
from the tickets config file) and calls the same post_ticket in a thread worker, so a slow
tracker never freezes the UI. Tokens come only from the environment, as for the command: the
form has no field for one and shows only the URL filed or the one-line error (already scrubbed
of tokens by the poster)."""

from __future__ import annotations

import re
from argparse import Namespace
from typing import TYPE_CHECKING, cast

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, RadioButton, RadioSet, Static
from textual.worker import Worker, WorkerState

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.tui.text import esc

if TYPE_CHECKING:
    from allreduce_doctor.export.client import Filed

TARGETS = ("github", "jira")
PLACEHOLDER = {"github": ("OWNER/REPO", "https://api.github.com"), "jira": ("PROJECT", "https://example.atlassian.net")}


# The poster's errors name `export --post`'s flags; the form names its own fields instead.
# Ordered: a flag with its example value first, then the bare flag.
FORM_WORDS = [
    (r"--post (github|jira)\b", r"\1"),
    (r"--repo OWNER/REPO", "the repository field (OWNER/REPO)"),
    (r"--project KEY", "the project field"),
    (r"--base-url https://\S+?(,|$)", r"the base URL field\1"),
    (r"--repo\b", "repository"),
    (r"--project\b", "project"),
    (r"--base-url\b", "base URL"),
    (r"--jira-email, ", ""),
    (r"--label\b", "label"),
]


def form_words(message: str) -> str:
    """A poster's one-line error in the words of this form (its field names, not CLI flags)."""
    for flag, field in FORM_WORDS:
        message = re.sub(flag, field, message)
    return message


def config_defaults() -> tuple[dict, str]:
    """({target: {where, base_url}} from the tickets config file, the one-line error reading it)."""
    from allreduce_doctor.export.ticket_settings import config_path, load_config

    try:
        conf = load_config(config_path(), False)
    except DoctorError as err:
        return {}, str(err)
    github, jira = conf.get("github", {}), conf.get("jira", {})
    return {"github": {"where": github.get("repo", ""), "base_url": github.get("base_url", "")},
            "jira": {"where": jira.get("project", ""), "base_url": jira.get("base_url", "")}}, ""


def post_args(target: str, where: str, base_url: str) -> Namespace:
    """The namespace `export --post TARGET` would parse; the rest comes from the config file."""
    return Namespace(post=target, to=None, repo=where if target == "github" else None,
                     project=where if target == "jira" else None, base_url=base_url or None, issue_type=None,
                     label=None, priority=None, component=None, jira_auth=None, jira_email=None, attach=None,
                     no_attach=False, config=None)


class PostDialog(ModalScreen):
    BINDINGS = [Binding("ctrl+s", "post", "Post", tooltip="file the ticket (enter in a field does too)"),
                Binding("escape", "dismiss", "Close", tooltip="close the post form")]

    def __init__(self, data: dict) -> None:
        super().__init__()
        self.data = data
        self.defaults, self.config_error = config_defaults()
        self.target = TARGETS[0]
        self.filed: Filed | None = None  # the export package's Filed, once posted

    def compose(self) -> ComposeResult:
        with Vertical(id="post-dialog", classes="dialog"):
            with RadioSet(id="post-target"):
                for target in TARGETS:
                    yield RadioButton(target, value=target == self.target, name=target)
            with Horizontal(classes="post-row"):
                yield Label("repository", id="post-where-label", classes="post-label")
                yield Input(id="post-where")
            with Horizontal(classes="post-row"):
                yield Label("base URL", classes="post-label")
                yield Input(id="post-base-url")
            yield Static("[$text-muted]The token is read from the environment: GH_TOKEN or GITHUB_TOKEN; "
                         "JIRA_API_TOKEN (with JIRA_EMAIL) or JIRA_PAT.[/]", id="post-token-note")
            with Horizontal(id="post-buttons"):
                yield Button("Post", id="post-send", variant="primary")
                yield Button("Close", id="post-close")
            yield Static("", id="post-status")
            yield Footer()

    def on_mount(self) -> None:
        self.query_one("#post-dialog").border_title = "Post the ticket"
        self._fill()
        if self.config_error:
            self._status("$text-error", self.config_error)
        self.query_one("#post-where", Input).focus()

    def _fill(self) -> None:
        """The config file's defaults for the target (what the user typed for the other is dropped)."""
        conf = self.defaults.get(self.target, {})
        where, url = PLACEHOLDER[self.target]
        self.query_one("#post-where-label", Label).update("repository" if self.target == "github" else "project")
        for wid, value, hint in (("#post-where", conf.get("where", ""), where), ("#post-base-url", conf.get("base_url", ""), url)):
            field = self.query_one(wid, Input)
            field.value, field.placeholder = value, hint

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        self.target = event.pressed.name or self.target
        self._fill()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "post-send":
            self.action_post()
        elif event.button.id == "post-close":
            self.dismiss()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.action_post()

    def action_post(self) -> None:
        if any(w.name == "post" and w.is_running for w in self.workers):
            return  # one ticket at a time: a second press must not file a duplicate
        args = post_args(self.target, self.query_one("#post-where", Input).value.strip(),
                         self.query_one("#post-base-url", Input).value.strip())
        self._status("$text-muted", f"posting to {self.target}...")
        self.run_worker(lambda: self._post(args), thread=True, name="post", exit_on_error=False)

    def _post(self, args: Namespace):
        from allreduce_doctor.export.post import post_ticket
        from allreduce_doctor.export.ticket import build_ticket

        return post_ticket(build_ticket(self.data), args)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.name != "post":
            return
        if event.state == WorkerState.SUCCESS:
            filed = self.filed = cast("Filed", event.worker.result)  # success: what post_ticket returned
            self._status("$text-success", f"{filed.url} ({filed.note})" if filed.note else filed.url)
        elif event.state == WorkerState.ERROR:
            err = event.worker.error
            # The poster's errors are one line with tokens scrubbed; anything else is a bug, said in one line too.
            self._status("$text-error", form_words(str(err)) if isinstance(err, DoctorError) else f"{type(err).__name__}: {err}")

    def _status(self, style: str, message: str) -> None:
        self.query_one("#post-status", Static).update(f"[{style}]{esc(message)}[/]")
