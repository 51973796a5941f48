"""The top-level --help, printed without importing argparse (its import and gettext's lookups were
most of the 20 ms `allreduce-doctor --help` took, against 8 ms for `python3 -c pass`).

It lays out argparse's own HelpFormatter text for a parser with one subparsers action and the
--help/--version options (CPython's Lib/argparse.py: HelpFormatter._format_action, _fill_text;
Lib/textwrap.py: TextWrapper._split and _wrap_chunks, whose chunks and greedy fill it repeats).
Where argparse would do something this layout does not (wrap the usage line, break a word longer
than a line, split an em-dash, colour the text from Python 3.14) it answers None and the caller
lets argparse print. tests/integration/test_plain_help.py proves the text identical at every width.
"""

from __future__ import annotations

import sys
from typing import cast

HELP_LINE = "show this help message and exit"
VERSION_LINE = "show program's version number and exit"


def _letter(ch: str) -> bool:
    """textwrap's `letter`, the regex class [^\\d\\W]: a word character that is not a digit."""
    return ch == "_" or (ch.isalnum() and not ch.isdecimal())


def _chunks(text: str) -> list[str] | None:
    """textwrap's chunks of a text argparse has normalised to single spaces: words, the spaces
    between them, and a word cut after a hyphen between letters (TextWrapper.wordsep_re)."""
    if not text.isascii():  # argparse collapses ASCII whitespace only; leave the rest to it
        return None
    chunks: list[str] = []
    for word in text.split(" "):
        if "--" in word[1:]:  # textwrap's em-dash rules
            return None
        start = 0
        for i in range(1, len(word) - 2):
            if word[i] != "-" or not _letter(word[i - 1]):
                continue
            after = _letter(word[i + 1]) and (_letter(word[i + 2]) or (
                word[i + 2] == "-" and i + 3 < len(word) and _letter(word[i + 3])))
            before = (i >= 2 and _letter(word[i - 2])) or (i >= 3 and word[i - 2] == "-" and _letter(word[i - 3]))
            if after and before:
                chunks.append(word[start:i + 1])
                start = i + 1
        chunks += [word[start:], " "]
    return chunks[:-1]


def _wrap(text: str, width: int) -> list[str] | None:
    """textwrap.wrap(text, width) for argparse's normalised text; None where a chunk is longer than a line."""
    chunks = _chunks(" ".join(text.split()))
    if chunks is None or max(map(len, chunks)) > width:
        return None
    lines: list[str] = []
    line: list[str] = []
    length = 0
    for chunk in chunks:
        if length + len(chunk) > width:
            lines.append("".join(line).rstrip(" "))
            line, length = [], 0
        if chunk == " " and not line and lines:
            continue  # a space that starts a line is dropped
        line.append(chunk)
        length += len(chunk)
    lines.append("".join(line).rstrip(" "))
    return lines


def _item(name: str, help_text: str, indent: int, help_position: int, help_width: int) -> str | None:
    """One argument's lines, as HelpFormatter._format_action writes them."""
    lines = _wrap(help_text, help_width)
    if lines is None:
        return None
    name_width = help_position - indent - 2
    if len(name) <= name_width:
        head = f"{'':{indent}}{name:<{name_width}}  {lines[0]}\n"
    else:
        head = f"{'':{indent}}{name}\n{'':{help_position}}{lines[0]}\n"
    return head + "".join(f"{'':{help_position}}{line}\n" for line in lines[1:])


def top_level_help(prog: str, description: str, epilog: str, commands: dict[str, str], columns: int) -> str | None:
    """argparse's --help of `prog [-h] [--version] COMMAND ...` at `columns`, or None where argparse must print it."""
    if sys.version_info >= (3, 14):
        return None
    width = columns - 2  # the width cli.build_parser gives its HelpFormatter
    usage = f"usage: {prog} [-h] [--version] COMMAND ..."
    if len(usage) > width:
        return None
    invocations = ("COMMAND", "-h, --help", "--version", *commands)
    help_position = min(max(map(len, invocations)) + 2 + 2, min(24, max(width - 20, 4)))
    help_width = max(width - help_position, 11)
    text_width = max(width, 11)
    items = [_item(name, line, 4, help_position, help_width) for name, line in commands.items()]
    items += [_item("-h, --help", HELP_LINE, 2, help_position, help_width),
              _item("--version", VERSION_LINE, 2, help_position, help_width)]
    about, after = _wrap(description, text_width), _wrap(epilog, text_width)
    if None in items or about is None or after is None:
        return None
    texts = cast("list[str]", items)  # None is not among them
    return (f"{usage}\n\n" + "\n".join(about) + "\n\npositional arguments:\n  COMMAND\n" + "".join(texts[:-2])
            + "\noptions:\n" + "".join(texts[-2:]) + "\n" + "\n".join(after) + "\n")
