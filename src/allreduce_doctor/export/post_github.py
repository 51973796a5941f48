"""GitHub (and GitHub Enterprise) issues: look for an open issue carrying the fingerprint label,
comment on it if there is one, else create the issue with the labels."""

from __future__ import annotations

from urllib.parse import quote

from .client import Client, Filed, PostError
from .layout import again
from .markdown import render_github
from .ticket import Ticket
from .ticket_settings import PostSettings


def post_github(ticket: Ticket, settings: PostSettings) -> Filed:
    owner, name = settings.repo.split("/", 1)
    repo = f"/repos/{quote(owner)}/{quote(name)}"
    client = Client("github", settings.base_url, f"Bearer {settings.token}", settings.token,
                    hints={401: f"check the token in {settings.token_env}",
                           403: f"the token in {settings.token_env} may not write issues in {settings.repo}, or a rate limit applies",
                           404: f"check --repo {settings.repo} and that the token can see it",
                           410: f"issues are disabled in {settings.repo}"},
                    headers={"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"})
    found = client.call("GET", f"{repo}/issues", query={"state": "open", "labels": ticket.fingerprint,
                                                          "sort": "created", "direction": "asc", "per_page": "10"})
    if not isinstance(found, list):
        raise client.fail(f"GET {repo}/issues: expected a list of issues, got {type(found).__name__}")
    # the issues endpoint also lists pull requests; a label on a PR is not a ticket. A hit is this
    # incident's only when it carries the fingerprint itself (a search can return near misses).
    issues = [i for i in found if isinstance(i, dict) and "pull_request" not in i and isinstance(i.get("number"), int)
              and _has_fingerprint(i, ticket.fingerprint)]
    if issues:
        issue = issues[0]
        client.call("POST", f"{repo}/issues/{issue['number']}/comments", payload={"body": render_github(ticket, intro=again(ticket))})
        return Filed(_url(client, issue), str(issue["number"]), "commented",
                     f"open issue #{issue['number']} has fingerprint {ticket.fingerprint}: added a comment instead of a duplicate")
    labels = list(dict.fromkeys([*ticket.labels, *settings.labels]))
    created = client.call("POST", f"{repo}/issues", payload={"title": ticket.title, "body": render_github(ticket),
                                                            "labels": labels})
    if not isinstance(created, dict) or not isinstance(created.get("number"), int):
        raise client.fail(f"POST {repo}/issues: the answer names no issue number")
    return Filed(_url(client, created), str(created["number"]), "created",
                 f"filed issue #{created['number']} with fingerprint {ticket.fingerprint}")


def _has_fingerprint(issue: dict, fingerprint: str) -> bool:
    names = {label.get("name") if isinstance(label, dict) else label for label in issue.get("labels") or []}
    return fingerprint in names


def _url(client: Client, issue: dict) -> str:
    url = issue.get("html_url")
    if not isinstance(url, str) or not url.startswith(("https://", "http://")):
        raise PostError(f"github: issue #{issue.get('number')} has no html_url in the answer")
    return url
