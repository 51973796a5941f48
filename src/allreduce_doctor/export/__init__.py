"""Ticket export: one Diagnosis (its JSON form) in, one ticket document out.

Kept import-light: `export --help` and `diagnose --export` load the renderers only when used.
"""

from __future__ import annotations

# format name -> what it is; the names are a CLI contract (`export --to`, `diagnose --export`)
FORMATS = {
    "markdown": "GitHub-flavoured Markdown document (title as a heading)",
    "github": "GitHub issue body (at most 65,536 characters; pipe into `gh issue create --body-file -`)",
    "jira": "Jira v2 wiki markup (REST API v2 description)",
    "jira-adf": "Jira v3 Atlassian Document Format JSON (REST API v3 description)",
    "json": "the ticket model as JSON",
}


def render_export(diagnosis: dict, fmt: str, label: str = "diagnosis") -> str:
    """The ticket document for a diagnosis dict, in one of FORMATS (DoctorError on bad input)."""
    from allreduce_doctor.errors import DoctorError

    if fmt not in FORMATS:
        raise DoctorError(f"unknown export format {fmt!r} (have: {', '.join(FORMATS)})")
    from .load import check_diagnosis
    from .ticket import build_ticket

    ticket = build_ticket(check_diagnosis(diagnosis, label))
    return render_ticket(ticket, fmt)


def render_ticket(ticket, fmt: str) -> str:
    if fmt in ("markdown", "github"):
        from .markdown import render_github, render_markdown

        return render_markdown(ticket) if fmt == "markdown" else render_github(ticket)
    if fmt == "jira":
        from .jira_wiki import render_jira

        return render_jira(ticket)
    if fmt == "jira-adf":
        from .adf import render_adf

        return render_adf(ticket)
    from .jsondoc import render_json

    return render_json(ticket)


__all__ = ["FORMATS", "render_export", "render_ticket"]
