"""Command-line parsing only: every command's work lives in a library module, imported lazily
so that `--help` and `--version` stay fast (no textual, no networkx; the top-level --help not even
argparse: plain_help prints its text), and a command line builds only its own command's parser."""

from __future__ import annotations

import sys

from allreduce_doctor import __version__
from allreduce_doctor.status import EXIT_BAD_INPUT, PROG, VERDICT_EXIT_HELP

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of --version)
if TYPE_CHECKING:
    import argparse
# Commands that live in their own package: module with add_parser(subparsers) and run(args) -> int.
# Every command's line in the top-level --help, in its order: read by the parser and by the
# hand-printed top-level help alike (a command's add_parser gives its description, not this line).
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
    "completion": "print the shell's tab-completion script (bash, zsh, fish)",
}
COMMANDS = tuple(COMMAND_HELP)
# Each command is commands/<name>.py with add_parser and run; those modules import only argparse-level
# code, so --help stays fast, and a command line imports only its own command's module.
COMMAND_PACKAGE = "allreduce_doctor.commands"
DESCRIPTION = ("Diagnose slow NCCL all-reduce on InfiniBand and RoCE v2 GPU nodes: read the node, walk a decision "
               "tree, name the root cause with its evidence, fix and verification.")
EPILOG = (f"{VERDICT_EXIT_HELP} Without a command, runs `diagnose`: on a terminal it opens the terminal UI, on a "
          "pipe (or with --format, -o or --export) it prints the report.")


class _WithHelpLine:
    """The subparsers action as a command's add_parser sees it: the command's help line comes from COMMAND_HELP."""

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
        stdout = sys.__stdout__  # None without a stdout at start: no size, as its AttributeError gave
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns if stdout is not None else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command. Given a `command`, only that one (all that parsing it reads);
    given "", every command as its name and help line (all the top-level --help shows)."""
    import argparse

    width = _terminal_columns() - 2  # what argparse.HelpFormatter computes when given no width

    class Parser(argparse.ArgumentParser):
        """Every parser (subparsers are of their parent's class) gives its formatter the width:
        given none, HelpFormatter imports shutil for it (with bz2 and lzma: 4 ms of a diagnose)."""

        def _get_formatter(self) -> argparse.HelpFormatter:
            # Every formatter_class here is a HelpFormatter (the default, or commands/*.py's
            # RawDescriptionHelpFormatter): it takes width. Anything else gets argparse's own call.
            formatter = self.formatter_class
            if isinstance(formatter, type) and issubclass(formatter, argparse.HelpFormatter):
                return formatter(prog=self.prog, width=width)
            return formatter(prog=self.prog)

    parser = Parser(prog=PROG, description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, line in COMMAND_HELP.items():
        if command == "":
            sub.add_parser(name, help=line)
        elif command is not None and name != command:
            continue
        else:
            _command(name).add_parser(_WithHelpLine(sub))
    return parser


def _command(name: str):
    import importlib

    return importlib.import_module(f"{COMMAND_PACKAGE}.{name}")


def _print_top_level_help() -> None:
    """argparse's top-level help text, without argparse where plain_help can lay it out; exits as argparse does."""
    from allreduce_doctor.plain_help import top_level_help

    text = top_level_help(PROG, DESCRIPTION, EPILOG, COMMAND_HELP, _terminal_columns())
    if text is None:
        build_parser("").parse_args(["--help"])  # argparse prints it and exits
    else:
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
        import argparse  # already loaded: the parser is built

        from allreduce_doctor.suggest import closest

        # build_parser's one subparsers action (parser._subparsers._group_actions[0]) holds the commands.
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        command = sub.choices[args.command]
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
    args.build_parser = build_parser  # what a command describing the command line itself needs (completion)
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
        from allreduce_doctor.commands.validate import replay_report

        return replay_report(record, args.format, args.output, args.export)
    return _command(args.command).run(args)
