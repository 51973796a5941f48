"""Command-line parsing only: every command's work lives in a library module, imported lazily
so that `--help` and `--version` stay fast (no textual, no networkx; the top-level --help not even
argparse: plain_help prints its text), and a command line builds only its own command's parser."""

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
# Every command's line in the top-level --help, in its order: read by the parser and by the
# hand-printed top-level help alike (a plugin's add_parser gives its description, not this line).
COMMAND_HELP = {
    "diagnose": "diagnose this node or a bundle (always headless)",
    "collect": "capture a snapshot bundle of this node (read-only)",
    "probes": "the probe catalogue",
    "runbook": "check or draw the decision trees",
    "export": "turn a diagnosis into a ticket (Markdown, GitHub, Jira, JSON), or file it with --post",
    "fleet": "compare every node of a job (ClusterShell over SSH, a Slurm job, or collected bundles)",
    "healthcheck": "fast bounded check for Slurm, cron, Prometheus and node-problem-detector",
    "validate": "prove the fabric under load: nccl-tests through the site's launcher while every node's "
                "counters are sampled (creates traffic; opt-in)",
    "watch": "live per-port RDMA counter rates with sparklines (loss and pause-cascade signatures)",
}
COMMANDS = tuple(COMMAND_HELP)
DESCRIPTION = ("Diagnose slow NCCL all-reduce on InfiniBand and RoCE v2 GPU nodes: read the node, walk a decision "
               "tree, name the root cause with its evidence, fix and verification.")
EPILOG = (f"{VERDICT_EXIT_HELP} Without a command, runs `diagnose`: on a terminal it opens the terminal UI, on a "
          "pipe (or with --format, -o or --export) it prints the report.")

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


class _WithHelpLine:
    """The subparsers action as a plugin's add_parser sees it: the command's help line comes from COMMAND_HELP."""

    def __init__(self, sub):
        self.sub = sub

    def add_parser(self, name: str, **kwargs):
        return self.sub.add_parser(name, help=COMMAND_HELP[name], **kwargs)


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


def _add_diagnose(sub) -> None:
    import argparse

    diag = sub.add_parser("diagnose", help=COMMAND_HELP["diagnose"], description=DIAGNOSE_DESCRIPTION,
                          epilog=DIAGNOSE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    _diagnose_args(diag)


def _add_collect(sub) -> None:
    import argparse

    collect = sub.add_parser("collect", help=COMMAND_HELP["collect"],
                             description="Capture what the probes read on this node (files and command outputs, "
                             "read-only) into a bundle to diagnose later, elsewhere.",
                             epilog=COLLECT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    collect.add_argument("-o", "--output", required=True, metavar="PATH",
                         help="bundle to write: a directory, or a file ending in .tar.gz, in an existing folder")
    collect.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                         help="seconds between the two counter samples (default 1)")
    collect.add_argument("--force", action="store_true", help="replace a bundle already at the output path")


def _add_probes(sub) -> None:
    probes = sub.add_parser("probes", help=COMMAND_HELP["probes"], epilog=TOOL_EXIT_HELP,
                            description="Every file and command the tool may touch on a node.")
    psub = probes.add_subparsers(dest="probes_command", metavar="ACTION", required=True)
    psub.add_parser("list", help="every file and command the tool may touch, with timeout and root need")


def _add_runbook(sub) -> None:
    runbook = sub.add_parser("runbook", help=COMMAND_HELP["runbook"], epilog=TOOL_EXIT_HELP,
                             description="Load and check the decision trees (runbooks/*.yaml), or draw them.")
    rsub = runbook.add_subparsers(dest="runbook_command", metavar="ACTION", required=True)
    validate = rsub.add_parser("validate", help="load and check runbooks (default: the shipped ones)")
    validate.add_argument("files", nargs="*", metavar="FILE")
    graph = rsub.add_parser("graph", help="draw a runbook as Graphviz dot or Mermaid")
    graph.add_argument("--format", choices=("dot", "mermaid"), default="mermaid")
    graph.add_argument("--runbook", metavar="ID", help="only this runbook (default: all)")
    graph.add_argument("files", nargs="*", metavar="FILE")


BUILT_IN_COMMANDS = {"diagnose": _add_diagnose, "collect": _add_collect, "probes": _add_probes, "runbook": _add_runbook}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command. Given a `command`, only that one (all that parsing it reads);
    given "", every command as its name and help line (all the top-level --help shows)."""
    import argparse

    width = _terminal_columns() - 2  # what argparse.HelpFormatter computes when given no width

    class Parser(argparse.ArgumentParser):
        """Every parser (subparsers are of their parent's class) gives its formatter the width:
        given none, HelpFormatter imports shutil for it (with bz2 and lzma: 4 ms of a diagnose)."""

        def _get_formatter(self) -> argparse.HelpFormatter:
            return self.formatter_class(prog=self.prog, width=width)

    parser = Parser(prog=PROG, description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, line in COMMAND_HELP.items():
        if command == "":
            sub.add_parser(name, help=line)
        elif command is not None and name != command:
            continue
        elif name in PLUGIN_COMMANDS:
            _plugin(name).add_parser(_WithHelpLine(sub))
        else:
            BUILT_IN_COMMANDS[name](sub)
    return parser


def _plugin(name: str):
    import importlib

    return importlib.import_module(PLUGIN_COMMANDS[name])


def _print_top_level_help() -> None:
    """argparse's top-level help text, without argparse where plain_help can lay it out; exits as argparse does."""
    from allreduce_doctor.plain_help import top_level_help

    text = top_level_help(PROG, DESCRIPTION, EPILOG, COMMAND_HELP, _terminal_columns())
    if text is None:
        build_parser("").parse_args(["--help"])  # argparse prints it and exits
    try:  # as argparse's print_help: stderr when there is no stdout; a closed pipe is forgiven
        (sys.stdout or sys.stderr).write(text)
    except (AttributeError, OSError):
        pass
    raise SystemExit(0)


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
    if argv == ["--version"]:  # before argparse, whose import alone costs more than the rest of --version
        print(f"allreduce-doctor {__version__}")
        return 0
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        return _unknown_command(argv[0])  # diagnose takes no bare words: a bare word is a command
    if argv in (["--help"], ["-h"]):
        _print_top_level_help()
    implicit = not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version"))
    if implicit:
        argv.insert(0, "diagnose")  # the main job: `allreduce-doctor [--fabric roce] ...`
    args = _parse(build_parser(argv[0] if argv[0] in COMMANDS else ""), argv)
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
