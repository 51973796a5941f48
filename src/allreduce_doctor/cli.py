"""Command-line parsing only: every command's work lives in a library module, imported lazily
so that `--help` and `--version` stay fast (no textual, no networkx)."""

from __future__ import annotations

import sys

from allreduce_doctor import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of --version)
if TYPE_CHECKING:
    import argparse
# Commands that live in their own package: module with add_parser(subparsers) and run(args) -> int.
# Those modules import only argparse-level code, so --help stays fast.
PLUGIN_COMMANDS = {
    "export": "allreduce_doctor.export.command",
    "fleet": "allreduce_doctor.fleet.command",
    "healthcheck": "allreduce_doctor.healthcheck.command",
    "watch": "allreduce_doctor.tui.command",
}
COMMANDS = ("diagnose", "collect", "probes", "runbook", *PLUGIN_COMMANDS)


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
    p.add_argument("--evidence", action="append", default=[], metavar="FILE",
                   help="pasted logs or tool output to diagnose from (repeatable; - reads stdin). "
                   "Alone it diagnoses the text only; with --snapshot or --live it adds to that node")
    p.add_argument("--live", action="store_true", help="with --evidence: also read this node")
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

    def __init__(self, sub):
        self.sub = sub

    def add_parser(self, name: str, help: str | None = None, **_ignored):  # noqa: A002 - argparse's name
        self.sub.add_parser(name, help=help)
        return _Ignored()


class _Ignored:
    """A parser whose arguments nobody will read: every call is accepted and dropped."""

    def __getattr__(self, _name: str):
        return lambda *args, **kwargs: self


def build_parser(commands_only: bool = False) -> argparse.ArgumentParser:
    """The whole parser; `commands_only`: just enough for the top-level --help (same text)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="allreduce-doctor",
        description="Diagnose slow NCCL all-reduce on InfiniBand and RoCE v2 GPU nodes: read the node, "
        "walk a decision tree, name the root cause with its evidence, fix and verification.",
        epilog="exit codes: 0 nothing found, 1 fault found, 2 bad input, 3 inconclusive. "
        "Without a command, runs `diagnose`.",
    )
    parser.add_argument("--version", action="version", version=f"allreduce-doctor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    if commands_only:
        sub = _CommandList(sub)

    diag = sub.add_parser("diagnose", help="diagnose this node or a bundle (always headless)")
    _diagnose_args(diag)

    collect = sub.add_parser("collect", help="capture a snapshot bundle of this node (read-only)")
    collect.add_argument("-o", "--output", required=True, metavar="PATH",
                         help="bundle to write: a new directory, or a file ending in .tar.gz")
    collect.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                         help="seconds between the two counter samples (default 1)")

    probes = sub.add_parser("probes", help="the probe catalogue")
    psub = probes.add_subparsers(dest="probes_command", metavar="ACTION", required=True)
    psub.add_parser("list", help="every file and command the tool may touch, with timeout and root need")

    runbook = sub.add_parser("runbook", help="check or draw the decision trees")
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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # before argparse: building every parser would triple the time
        print(f"allreduce-doctor {__version__}")
        return 0
    implicit = not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version"))
    if implicit:
        argv.insert(0, "diagnose")  # the main job: `allreduce-doctor [--fabric roce] ...`
    args = build_parser(commands_only=argv in (["--help"], ["-h"])).parse_args(argv)
    args.implicit_diagnose = implicit  # plain `allreduce-doctor` on a terminal opens the UI
    from allreduce_doctor.status import run_guarded

    return run_guarded(lambda: _run(args))


def _run(args: argparse.Namespace) -> int:
    if args.command in PLUGIN_COMMANDS:
        return _plugin(args.command).run(args)
    from allreduce_doctor import commands

    return getattr(commands, f"cmd_{args.command}")(args)
