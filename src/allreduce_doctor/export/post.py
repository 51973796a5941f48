"""Filing a ticket: GitHub or Jira as the settings say, with the bundle attached on Jira.
The HTTP work is in client.py; each tracker's steps in post_github.py and post_jira.py.
"""

from __future__ import annotations

import os
import sys

from .client import Filed, PostError

MAX_ATTACHMENT = 100 * 1024 * 1024


def attachment(args, ticket) -> tuple[str, bytes] | None:
    """(name, bytes) of the bundle to attach: --attach FILE, else the diagnosis's bundle file."""
    if getattr(args, "no_attach", False):
        return None
    path = getattr(args, "attach", None) or ticket.bundle
    if not path:
        return None
    if not os.path.isfile(path):
        if getattr(args, "attach", None):
            raise PostError(f"--attach {path}: no such file")
        kind = "a directory" if os.path.isdir(path) else "not found"
        print(f"allreduce-doctor: the diagnosis's bundle {path} is {kind}: not attached "
              "(attach a .tar.gz with --attach FILE)", file=sys.stderr)
        return None
    size = os.path.getsize(path)
    if size > MAX_ATTACHMENT:
        raise PostError(f"{path}: {size // (1024 * 1024)} MiB is too large to attach (at most "
                        f"{MAX_ATTACHMENT // (1024 * 1024)} MiB); use --no-attach")
    with open(path, "rb") as fh:
        return os.path.basename(path), fh.read()


def post_ticket(ticket, args) -> Filed:
    """File (or comment on) the ticket as `args` say; the document format follows args.to."""
    from .ticket_settings import resolve

    settings = resolve(args, args.to)
    if settings.service == "github":
        from .post_github import post_github

        return post_github(ticket, settings)
    from .post_jira import post_jira

    return post_jira(ticket, settings, attachment(args, ticket))
