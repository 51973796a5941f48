"""`allreduce-doctor collect`: a snapshot bundle of this node, read-only.

Only argparse-level code at module level: the CLI builds this parser on each start of the command.
"""

from __future__ import annotations

import argparse

from allreduce_doctor.status import EXIT_HEALTHY, PROG, TOOL_EXIT_HELP

COLLECT_EPILOG = f"""\
examples:
  {PROG} collect -o node.tar.gz                     # a file in the current folder
  {PROG} collect -o /var/tmp/snap --force           # a directory, replacing an earlier bundle

{TOOL_EXIT_HELP}"""


def add_parser(sub) -> None:
    collect = sub.add_parser("collect", description="Capture what the probes read on this node (files and command outputs, "
                             "read-only) into a bundle to diagnose later, elsewhere.",
                             epilog=COLLECT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    collect.add_argument("-o", "--output", required=True, metavar="PATH",
                         help="bundle to write: a directory, or a file ending in .tar.gz, in an existing folder")
    collect.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                         help="seconds between the two counter samples (default 1)")
    collect.add_argument("--force", action="store_true", help="replace a bundle already at the output path")



def run(args) -> int:
    from allreduce_doctor.capture import collect
    from allreduce_doctor.ranges import check_interval

    check_interval(args.interval, live=True)
    summary = collect(args.output, args.interval, args.force)
    print(summary)
    return EXIT_HEALTHY
