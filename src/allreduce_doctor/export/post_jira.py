"""Jira Cloud and Data Center: search by JQL for an open issue with the fingerprint label,
comment on it if there is one, else create the issue; then attach the snapshot bundle.

Cloud: basic auth with the account email and an API token, search at /rest/api/{2,3}/search/jql
(the old /search is gone there). Data Center: a bearer personal access token, /rest/api/2/search.
"""

from __future__ import annotations

import base64
import re

from .adf import adf_document
from .client import Client, Filed, PostError, multipart
from .jira_wiki import render_jira
from .layout import again
from .ticket import Ticket
from .ticket_settings import PostSettings

_KEY = re.compile(r"^[A-Z][A-Z0-9_]*-[0-9]+$")


def _body(ticket: Ticket, version: int, intro: list | None = None):
    return adf_document(ticket, intro=intro) if version == 3 else render_jira(ticket, intro=intro)


def _client(settings: PostSettings) -> Client:
    if settings.auth == "cloud":
        basic = base64.b64encode(f"{settings.email}:{settings.token}".encode()).decode()
        auth, who = f"Basic {basic}", f"{settings.email} with the API token in {settings.token_env}"
    else:
        auth, who = f"Bearer {settings.token}", f"the personal access token in {settings.token_env}"
    return Client("jira", settings.base_url, auth, settings.token,
                  hints={401: f"check {who}", 403: f"{who} may not create issues in {settings.project}",
                         404: f"check the base URL and project {settings.project}"})


def _search(client: Client, settings: PostSettings, fingerprint: str) -> str | None:
    jql = f'labels = "{fingerprint}" AND statusCategory != Done'
    path = f"/rest/api/{settings.api_version}/search/jql" if settings.auth == "cloud" else "/rest/api/2/search"
    found = client.call("GET", path, query={"jql": jql, "fields": "key,summary", "maxResults": "5"})
    issues = found.get("issues") if isinstance(found, dict) else None
    if not isinstance(issues, list):
        raise client.fail(f"GET {path}: the answer has no list of issues")
    keys = [i.get("key") for i in issues if isinstance(i, dict) and isinstance(i.get("key"), str) and _KEY.match(i["key"])]
    return keys[0] if keys else None


def _fields(ticket: Ticket, settings: PostSettings) -> dict:
    fields = {"project": {"key": settings.project}, "issuetype": {"name": settings.issue_type},
              "summary": ticket.title, "description": _body(ticket, settings.api_version),
              "labels": list(dict.fromkeys([*ticket.labels, *settings.labels]))}
    if settings.priority:
        fields["priority"] = {"name": settings.priority}
    if settings.components:
        fields["components"] = [{"name": c} for c in settings.components]
    return fields


def post_jira(ticket: Ticket, settings: PostSettings, bundle: tuple[str, bytes] | None) -> Filed:
    client = _client(settings)
    api = f"/rest/api/{settings.api_version}"
    key = _search(client, settings, ticket.fingerprint)
    if key:
        client.call("POST", f"{api}/issue/{key}/comment", payload={"body": _body(ticket, settings.api_version, again(ticket))})
        action, note = "commented", f"open issue {key} has fingerprint {ticket.fingerprint}: added a comment instead of a duplicate"
    else:
        created = client.call("POST", f"{api}/issue", payload={"fields": _fields(ticket, settings)})
        key = created.get("key") if isinstance(created, dict) else None
        if not isinstance(key, str) or not _KEY.match(key):
            raise client.fail(f"POST {api}/issue: the answer names no issue key")
        action, note = "created", f"filed {key} with fingerprint {ticket.fingerprint}"
    url = f"{settings.base_url}/browse/{key}"
    if bundle:
        body, content_type = multipart("file", bundle[0], bundle[1])
        try:
            client.call("POST", f"{api}/issue/{key}/attachments", body=body, content_type=content_type,
                        headers={"X-Atlassian-Token": "no-check"})
        except PostError as err:  # the ticket exists: say where, then what failed
            raise client.fail(f"{action} {url}, but attaching {bundle[0]} failed: {str(err).removeprefix('jira: ')}") from None
        note += f"; attached {bundle[0]}"
    return Filed(url, key, action, note)
