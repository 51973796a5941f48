"""`allreduce-doctor export`: a diagnosis file in, a ticket document out, or filed with --post.

Only argparse at module level: the CLI builds every parser on each start.
"""

from __future__ import annotations

import argparse

from allreduce_doctor.export import FORMATS

EPILOG = """\
examples:
  allreduce-doctor diagnose --snapshot B.tar.gz --format json -o diag.json
  allreduce-doctor export --to github diag.json | gh issue create --title "..." --body-file -
  GH_TOKEN=... allreduce-doctor export --post github --repo acme/gpu-incidents diag.json
  JIRA_EMAIL=me@acme.com JIRA_API_TOKEN=... allreduce-doctor export --post jira --to jira-adf \\
      --base-url https://acme.atlassian.net --project OPS diag.json

Posting searches for an open ticket with the same fingerprint label first and comments on it
instead of filing a duplicate. Settings may live in $XDG_CONFIG_HOME/allreduce-doctor/tickets.toml
([github] repo, base_url, labels; [jira] base_url, project, issue_type, labels, priority,
components, auth, email). Tokens only from the environment: GH_TOKEN or GITHUB_TOKEN;
JIRA_API_TOKEN (Cloud, with the account email); JIRA_PAT (Data Center). See docs/export.md."""


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "export", description="Turn a diagnosis (what `diagnose --format json` writes) into a ticket document, "
        "or file it in GitHub or Jira without duplicates.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("diagnosis", metavar="DIAGNOSIS.json", help="the diagnosis file (- reads stdin)")
    p.add_argument("--to", choices=list(FORMATS), metavar="FORMAT",
                   help=f"document format: {', '.join(FORMATS)} (with --post: github, jira or jira-adf)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the document to FILE instead of stdout")
    post = p.add_argument_group("filing the ticket")
    post.add_argument("--post", choices=("github", "jira"), help="file it (or comment on the open ticket with the same fingerprint)")
    post.add_argument("--repo", metavar="OWNER/REPO", help="GitHub repository")
    post.add_argument("--base-url", metavar="URL",
                      help="API base: GitHub Enterprise https://HOST/api/v3 (default https://api.github.com); "
                      "Jira https://SITE.atlassian.net or the Data Center URL")
    post.add_argument("--project", metavar="KEY", help="Jira project key")
    post.add_argument("--issue-type", metavar="NAME", help="Jira issue type (default Bug)")
    post.add_argument("--label", action="append", metavar="NAME", help="an extra label (repeatable)")
    post.add_argument("--priority", metavar="NAME", help="Jira priority name")
    post.add_argument("--component", action="append", metavar="NAME", help="Jira component (repeatable)")
    post.add_argument("--jira-auth", choices=("cloud", "datacenter"),
                      help="Cloud: email + JIRA_API_TOKEN; Data Center: JIRA_PAT bearer (default: cloud for *.atlassian.net)")
    post.add_argument("--jira-email", metavar="EMAIL", help="Jira Cloud account email (or JIRA_EMAIL)")
    post.add_argument("--attach", metavar="FILE", help="attach this file on Jira (default: the diagnosis's bundle, if a file)")
    post.add_argument("--no-attach", action="store_true", help="attach nothing")
    post.add_argument("--config", metavar="FILE", help="settings file (default $XDG_CONFIG_HOME/allreduce-doctor/tickets.toml)")
    return p


def run(args) -> int:
    from allreduce_doctor.errors import DoctorError
    from allreduce_doctor.export import render_ticket
    from allreduce_doctor.export.load import read_diagnosis
    from allreduce_doctor.export.ticket import build_ticket
    from allreduce_doctor.output import write_output
    from allreduce_doctor.status import EXIT_HEALTHY

    if not args.post and not args.to:
        raise DoctorError(f"export: which format? --to {'|'.join(FORMATS)} (or --post github|jira)")
    ticket = build_ticket(read_diagnosis(args.diagnosis))
    if not args.post:
        write_output(render_ticket(ticket, args.to), args.output)
        return EXIT_HEALTHY
    import sys

    from allreduce_doctor.export.post import post_ticket

    filed = post_ticket(ticket, args)
    if args.output:
        write_output(render_ticket(ticket, args.to or ("github" if args.post == "github" else "jira")), args.output)
    print(f"allreduce-doctor: {filed.note}", file=sys.stderr)
    print(filed.url)
    return EXIT_HEALTHY
