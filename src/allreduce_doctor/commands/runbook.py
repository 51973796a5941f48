"""`allreduce-doctor runbook`: check the decision trees, or draw them.

Only argparse-level code at module level: the CLI builds this parser on each start of the command.
"""

from __future__ import annotations

from pathlib import Path

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.output import write_output
from allreduce_doctor.status import EXIT_HEALTHY, TOOL_EXIT_HELP


def add_parser(sub) -> None:
    runbook = sub.add_parser("runbook", epilog=TOOL_EXIT_HELP,
                             description="Load and check the decision trees (runbooks/*.yaml), or draw them.")
    rsub = runbook.add_subparsers(dest="runbook_command", metavar="ACTION", required=True)
    validate = rsub.add_parser("validate", help="load and check runbooks (default: the shipped ones)")
    validate.add_argument("files", nargs="*", metavar="FILE")
    graph = rsub.add_parser("graph", help="draw a runbook as Graphviz dot or Mermaid")
    graph.add_argument("--format", choices=("dot", "mermaid"), default="mermaid")
    graph.add_argument("--runbook", metavar="ID", help="only this runbook (default: all)")
    graph.add_argument("files", nargs="*", metavar="FILE")



def run(args) -> int:
    from allreduce_doctor.doctor import Doctor

    paths = [Path(f) for f in args.files]
    for path in paths:
        if not path.is_file():
            raise DoctorError(f"{path}: no such runbook file")
    validate = args.runbook_command == "validate"  # checks the files afresh, never trusts the cache
    runbooks = (Doctor.from_runbook_files(paths) if paths else Doctor.load(validate=validate)).runbooks
    if validate:
        names = ", ".join(sorted(runbooks.runbooks))
        causes = {getattr(n, "cause", None) for n in runbooks.nodes()} - {None}
        print(f"ok: {len(runbooks.runbooks)} runbooks ({names}), {len(runbooks.nodes())} nodes, "
              f"{len(runbooks.facts)} facts read, {len(causes)} causes reachable")
        return EXIT_HEALTHY
    from allreduce_doctor.runbook.graph import to_dot, to_mermaid

    if args.runbook and args.runbook not in runbooks.runbooks:
        raise DoctorError(f"--runbook {args.runbook}: no such runbook (have: {', '.join(sorted(runbooks.runbooks))})")
    render = to_dot if args.format == "dot" else to_mermaid
    write_output(render(runbooks, args.runbook), None)
    return EXIT_HEALTHY
