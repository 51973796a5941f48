"""The ticket model as JSON: for trackers and scripts that build their own ticket. Unlike the
documents it keeps every value whole (redacted): no size limit, nothing folded."""

from __future__ import annotations

import json

from .ticket import Ticket

TICKET_FORMAT_VERSION = 1


def render_json(ticket: Ticket) -> str:
    data = {"ticket_format_version": TICKET_FORMAT_VERSION, **ticket.to_dict()}
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n"
