"""Required words of a regular expression: a cheap test that rules a signature row out.

A failed job's log holds thousands of failure lines, each matched against the signature table row
by row (the first row that matches names the line): 60 regex searches a line. Most rows name words
any match must contain (`ibv_modify_qp failed`, `no device found`); a plain `in` test on the
lowered line rules such a row out at a fraction of a search's cost, and the search runs only where
the words are present. The words are read from the pattern's own parse tree (CPython's re parser),
so they are necessary by construction: literals in the pattern's top-level sequence, or one run
from each branch of a top-level alternation. A pattern they cannot be read from has none, and is
always searched. Sound only for ASCII text matched case-blind (the caller checks isascii()).
"""

from __future__ import annotations

import importlib
import re

MIN_WORD = 3  # shorter runs rule out too little to be worth the test


def required_words(pattern: str, flags: int = re.IGNORECASE) -> tuple[str, ...]:
    """Lowercased words one of which every match of `pattern` contains; () when none can be read."""
    try:
        sre = importlib.import_module("re._constants")  # CPython 3.11+; else no words, same answers
        sre_parse = importlib.import_module("re._parser")

        tree = list(sre_parse.parse(pattern, flags))
        word = _longest_run(tree, sre.LITERAL)
        if len(word) >= MIN_WORD:
            return (word,)
        if len(tree) == 1 and tree[0][0] is sre.BRANCH:
            words = tuple(_longest_run(list(branch), sre.LITERAL) for branch in tree[0][1][1])
            if all(len(w) >= MIN_WORD for w in words):
                return words
    except Exception:  # noqa: BLE001 - a parser that differs gives no words: every row is searched
        pass
    return ()


def _longest_run(seq: list, literal) -> str:
    """The longest run of consecutive ASCII literals in one parsed sequence, lowercased."""
    best, run = "", ""
    for op, value in seq:
        if op is literal and value < 128:
            run += chr(value).lower()
            continue
        best, run = max(best, run, key=len), ""
    return max(best, run, key=len)

