"""The top-level --help printed without argparse is argparse's text, byte for byte, at every width."""

from __future__ import annotations

import contextlib
import io
import sys

import pytest

from allreduce_doctor import cli
from allreduce_doctor.plain_help import _chunks, _wrap, top_level_help


def argparse_help(monkeypatch, columns: int, command: str | None) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    return cli.build_parser(command).format_help()


def plain_help(columns: int, commands: dict[str, str] | None = None) -> str | None:
    return top_level_help(cli.PROG, cli.DESCRIPTION, cli.EPILOG, commands or cli.COMMAND_HELP, columns)


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="argparse prints it from 3.14 (colour)")
def test_plain_help_is_argparse_text_at_every_width(monkeypatch):
    laid_out = []
    for columns in range(1, 261):
        text = plain_help(columns)
        if text is not None:
            laid_out.append(columns)
            assert text == argparse_help(monkeypatch, columns, ""), columns
    assert laid_out == list(range(54, 261))  # below 54 columns argparse wraps the usage line itself
    # the whole parser lists the commands exactly as the one built for --help
    assert argparse_help(monkeypatch, 100, None) == argparse_help(monkeypatch, 100, "")


@pytest.mark.parametrize("columns", [60, 100, 200])
def test_main_help_prints_argparse_text_and_exits_0(monkeypatch, columns):
    expected = argparse_help(monkeypatch, columns, "")
    for flag in ("--help", "-h"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as stop:
            cli.main([flag])
        assert stop.value.code == 0 and out.getvalue() == expected


def test_a_narrow_terminal_gets_argparse_own_wrapping(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "30")
    with pytest.raises(SystemExit) as stop:
        cli.main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: allreduce-doctor\n       [-h] [--version]\n       COMMAND ...\n\n")
    assert out == argparse_help(monkeypatch, 30, "")


@pytest.mark.parametrize(("text", "chunks"), [
    ("all-reduce per-port", ["all-", "reduce", " ", "per-", "port"]),
    ("node-problem-detector", ["node-", "problem-", "detector"]),
    ("a-b-cd ab-c-de", ["a-b-", "cd", " ", "ab-", "c-", "de"]),
    ("--post -o x-ray 10-bit", ["--post", " ", "-o", " ", "x-ray", " ", "10-bit"]),
])
def test_chunks_are_textwrap_chunks(text, chunks):
    import textwrap

    assert _chunks(text) == chunks == [c for c in textwrap.TextWrapper().wordsep_re.split(text) if c]


@pytest.mark.parametrize("text", ["an em--dash", "caf\u00e9 au lait"])
def test_what_textwrap_splits_otherwise_is_left_to_argparse(text):
    assert _chunks(text) is None
    assert plain_help(100, {**cli.COMMAND_HELP, "diagnose": text}) is None


def test_a_word_longer_than_a_line_is_left_to_argparse():
    assert _wrap("short " + "x" * 30, 29) is None
    assert _wrap("short " + "x" * 29, 29) == ["short", "x" * 29]
