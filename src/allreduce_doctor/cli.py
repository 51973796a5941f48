"""Command-line parsing only: every command's work lives in a library module, imported lazily
so that `--help` and `--version` stay fast (no textual, no networkx)."""

from __future__ import annotations

import sys

from allreduce_doctor import __version__
from allreduce_doctor.status import EXIT_BAD_INPUT, PROG, TOOL_EXIT_HELP, VERDICT_EXIT_HELP
from allreduce_doctor.symptoms import SYMPTOMS

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of --version)
if TYPE_CHECKING:
    import argparse
# Commands that live in their own package: module with add_parser(subparsers) and run(args) -> int.
# Those modules import only argparse-level code, so --help stays fast.
PLUGIN_COMMANDS = {
    "export": "allreduce_doctor.export.command",
    "fleet": "allreduce_doctor.fleet.command",
    "healthcheck": "allreduce_doctor.healthcheck.command",
    "validate": "allreduce_doctor.validate.command",
    "watch": "allreduce_doctor.tui.command",
}
COMMANDS = ("diagnose", "collect", "probes", "runbook", *PLUGIN_COMMANDS)

DIAGNOSE_DESCRIPTION = """\
Diagnose this node, a snapshot bundle or pasted logs: walk the decision tree (transport, links,
PCIe, GPUDirect, then the InfiniBand or RoCE branch) and name the root cause with its evidence,
fix and verification. Always headless; plain `allreduce-doctor` on a terminal opens the UI."""
DIAGNOSE_EPILOG = f"""\
examples:
  {PROG} diagnose                                   # this node, text report
  {PROG} diagnose --snapshot node.tar.gz --format json -o diag.json
  {PROG} diagnose --evidence nccl.log --evidence ibstat.txt
  {PROG} diagnose --answer validated_scale=two_nodes --export github

{VERDICT_EXIT_HELP}"""
COLLECT_EPILOG = f"""\
examples:
  {PROG} collect -o node.tar.gz                     # a file in the current folder
  {PROG} collect -o /var/tmp/snap --force           # a directory, replacing an earlier bundle

{TOOL_EXIT_HELP}"""


def _diagnose_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fabric", choices=("auto", "ib", "roce"), default="auto",
                   help="which branch to walk; auto picks it from the ports' link layer (default)")
    p.add_argument("--snapshot", metavar="PATH", help="diagnose a bundle (directory or .tar.gz) instead of this node")
    p.add_argument("--format", choices=("text", "json", "markdown", "prometheus", "npd"),
                   help="report format (default: text); prometheus: metrics; npd: node-problem-detector's one line")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--answer", action="append", default=[], metavar="NAME=VALUE",
                   help="answer an operator question headless (repeatable), e.g. validated_scale=two_nodes")
    p.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                   help="seconds between the two counter samples (default 1)")
    p.add_argument("--site", metavar="FILE", help="the declared fabric policy (RoCE lossless/lossy, NCCL_IB_TC, "
                   "link rate) in TOML; default /etc/allreduce-doctor/site.toml when it exists")
    p.add_argument("--evidence", action="append", default=[], metavar="FILE",
                   help="pasted logs or tool output to diagnose from (repeatable; - reads stdin). "
                   "Alone it diagnoses the text only; with --snapshot or --live it adds to that node")
    p.add_argument("--live", action="store_true", help="with --evidence: also read this node")
    p.add_argument("--symptom", choices=SYMPTOMS,
                   help="what the job showed: narrows the candidate causes of pasted text")
    p.add_argument("--export", metavar="FORMAT", help="also write a ticket document in FORMAT (see `export --help`)")


def _plugin(name: str):
    import importlib

    try:
        return importlib.import_module(PLUGIN_COMMANDS[name])
    except ModuleNotFoundError as err:
        if err.name and PLUGIN_COMMANDS[name].startswith(err.name):
            return None  # that feature is not built yet
        raise


class _CommandList:
    """Stands in for the subparsers action when only the command list is shown (top-level
    --help): each command gets its name and help line, its own arguments are never built."""

    def __init__(self, sub, formatter_class):
        self.sub, self.formatter_class = sub, formatter_class

    def add_parser(self, name: str, help: str | None = None, **_ignored):  # noqa: A002 - argparse's name
        self.sub.add_parser(name, help=help, formatter_class=self.formatter_class)
        return _Ignored()


class _Ignored:
    """A parser whose arguments nobody will read: every call is accepted and dropped."""

    def __getattr__(self, _name: str):
        return lambda *args, **kwargs: self


def _terminal_columns() -> int:
    """shutil.get_terminal_size's answer without importing shutil (it pulls in bz2 and lzma: 4 ms of --help)."""
    import os

    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def build_parser(commands_only: bool = False) -> argparse.ArgumentParser:
    """The whole parser; `commands_only`: just enough for the top-level --help (same text)."""
    import argparse

    width = _terminal_columns() - 2  # what argparse.HelpFormatter computes when given no width

    def formatter(prog: str) -> argparse.HelpFormatter:
        return argparse.HelpFormatter(prog, width=width)

    parser = argparse.ArgumentParser(
        prog="allreduce-doctor",
        formatter_class=formatter,
        description="Diagnose slow NCCL all-reduce on InfiniBand and RoCE v2 GPU nodes: read the node, "
        "walk a decision tree, name the root cause with its evidence, fix and verification.",
        epilog=f"{VERDICT_EXIT_HELP} Without a command, runs `diagnose`: on a terminal it opens the terminal UI, "
        "on a pipe (or with --format, -o or --export) it prints the report.",
    )
    parser.add_argument("--version", action="version", version=f"allreduce-doctor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if commands_only:
        sub = _CommandList(sub, formatter)

    diag = sub.add_parser("diagnose", help="diagnose this node or a bundle (always headless)",
                          description=DIAGNOSE_DESCRIPTION, epilog=DIAGNOSE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _diagnose_args(diag)

    collect = sub.add_parser("collect", help="capture a snapshot bundle of this node (read-only)",
                             description="Capture what the probes read on this node (files and command outputs, "
                             "read-only) into a bundle to diagnose later, elsewhere.",
                             epilog=COLLECT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    collect.add_argument("-o", "--output", required=True, metavar="PATH",
                         help="bundle to write: a directory, or a file ending in .tar.gz, in an existing folder")
    collect.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                         help="seconds between the two counter samples (default 1)")
    collect.add_argument("--force", action="store_true", help="replace a bundle already at the output path")

    probes = sub.add_parser("probes", help="the probe catalogue", epilog=TOOL_EXIT_HELP,
                            description="Every file and command the tool may touch on a node.")
    psub = probes.add_subparsers(dest="probes_command", metavar="ACTION", required=True)
    psub.add_parser("list", help="every file and command the tool may touch, with timeout and root need")

    runbook = sub.add_parser("runbook", help="check or draw the decision trees", epilog=TOOL_EXIT_HELP,
                             description="Load and check the decision trees (runbooks/*.yaml), or draw them.")
    rsub = runbook.add_subparsers(dest="runbook_command", metavar="ACTION", required=True)
    validate = rsub.add_parser("validate", help="load and check runbooks (default: the shipped ones)")
    validate.add_argument("files", nargs="*", metavar="FILE")
    graph = rsub.add_parser("graph", help="draw a runbook as Graphviz dot or Mermaid")
    graph.add_argument("--format", choices=("dot", "mermaid"), default="mermaid")
    graph.add_argument("--runbook", metavar="ID", help="only this runbook (default: all)")
    graph.add_argument("files", nargs="*", metavar="FILE")
    for name in PLUGIN_COMMANDS:
        module = _plugin(name)
        if module is not None:
            module.add_parser(sub)
    return parser


def _unknown_command(word: str) -> int:
    from allreduce_doctor.suggest import closest

    near = closest(word, COMMANDS)
    print(f"{PROG}: error: unknown command '{word}'" + (f" (did you mean {near}?)" if near else "")
          + f"; commands: {', '.join(COMMANDS)}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse; an unknown option is reported by the command it was given to, with a did-you-mean."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        from allreduce_doctor.suggest import closest

        command = parser._subparsers._group_actions[0].choices[args.command]  # type: ignore[union-attr]
        options = [o for action in command._actions for o in action.option_strings]
        near = closest(extra[0].split("=")[0], options) if extra[0].startswith("-") else None
        command.error(f"unrecognized arguments: {' '.join(extra)}" + (f" (did you mean {near}?)" if near else ""))
    return args


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # before argparse: building every parser would triple the time
        print(f"allreduce-doctor {__version__}")
        return 0
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        return _unknown_command(argv[0])  # diagnose takes no bare words: a bare word is a command
    implicit = not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version"))
    if implicit:
        argv.insert(0, "diagnose")  # the main job: `allreduce-doctor [--fabric roce] ...`
    args = _parse(build_parser(commands_only=argv in (["--help"], ["-h"])), argv)
    args.implicit_diagnose = implicit  # plain `allreduce-doctor` on a terminal opens the UI
    from allreduce_doctor.status import run_guarded

    return run_guarded(lambda: _run(args))


def _replayed_record(args: argparse.Namespace) -> str | None:
    """The folder `diagnose --snapshot` or `fleet --snapshots` names, when it is a validate record."""
    path = args.snapshots if args.command == "fleet" else None
    if args.command == "diagnose" and not args.evidence:
        path = args.snapshot
    if not path:
        return None
    from allreduce_doctor.validate.record import is_record

    return path if is_record(path) else None


def _run(args: argparse.Namespace) -> int:
    record = _replayed_record(args)
    if record:  # a validate run's record replays through validate's judge, whichever command reads it
        from allreduce_doctor.validate.command import replay_report

        return replay_report(record, args.format, args.output, args.export)
    if args.command in PLUGIN_COMMANDS:
        return _plugin(args.command).run(args)
    from allreduce_doctor import commands

    return getattr(commands, f"cmd_{args.command}")(args)
