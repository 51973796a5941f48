"""The required words of a signature row (evidence/needles.py) are necessary: a line the row's
pattern matches always holds one, so the prefiltered table names every line as the plain one does."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allreduce_doctor.evidence import signatures
from allreduce_doctor.evidence.needles import required_words
from tests.evidence.helpers import CASES, REAL

ROWS = signatures.signatures()
WORDS = [required_words(row.pattern.pattern, row.pattern.flags) for row in ROWS]
CORPUS = sorted({line for path in sorted(REAL.glob("*.txt")) + sorted(CASES.glob("*.txt"))
                 for line in path.read_text(errors="replace").splitlines() if line.strip()}
                | {line for row in ROWS for line in row.examples})


@pytest.mark.parametrize("pattern,words", [
    ("NET/IB ?: ?No device found", ("no device found",)),   # an optional space ends a run
    ("ibv_modify_qp failed.*(timed out|\\b110\\b)", ("ibv_modify_qp failed",)),
    ("Connection refused|connect.*timed out", ("connection refused", "timed out")),
    ("abc|de", ()),                                          # a branch without a word: always searched
    ("(x|y)zz", ()),                                         # too short to be worth the test
    ("wrong type \\d+ != \\d+", ("wrong type ",)),
    ("caf\u00e9 au lait", (" au lait",)),                    # non-ASCII ends a run
    ("unclosed (group", ()),                                 # a pattern the parser refuses: no words
])
def test_the_words_of_a_pattern(pattern, words):
    assert required_words(pattern) == words


def test_each_row_carries_its_own_words():
    """The words the table hands the matcher (cached with the file) are the pattern's own."""
    assert [row.words for row in ROWS] == [tuple(w) for w in WORDS]


def test_a_row_is_compiled_only_when_a_line_reaches_it():
    rows = [signatures.Signature(r.kind, signatures.LazyPattern(r.pattern.pattern), r.says, r.blocking, r.source,
                                 r.examples, r.words) for r in ROWS]
    signatures._Matcher().match(tuple(rows), "NCCL INFO NCCL version 2.21.5+cuda12.4")
    compiled = [r.kind for r in rows if r.pattern._compiled is not None]
    assert 0 < len(compiled) < len(rows) // 4, compiled


def test_most_rows_have_words():
    """The prefilter is only worth its name if it rules rows out."""
    assert sum(1 for w in WORDS if w) >= len(ROWS) * 3 // 4


def test_every_line_the_corpus_holds_is_named_as_without_words():
    plain = [next((row.kind for row in ROWS if row.pattern.search(line)), None) for line in CORPUS]
    matcher = signatures._Matcher()  # the words are used from the first line
    filtered = [getattr(matcher.match(ROWS, line), "kind", None) for line in CORPUS]
    assert filtered == plain
    assert sum(kind is not None for kind in plain) > 100


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_a_match_always_holds_a_word(data):
    """Lines built from a row's own examples, cut and case-shuffled: where the pattern matches, a word is there."""
    i = data.draw(st.integers(0, len(ROWS) - 1))
    row, words = ROWS[i], WORDS[i]
    example = data.draw(st.sampled_from(row.examples))
    a, b = sorted(data.draw(st.tuples(st.integers(0, len(example)), st.integers(0, len(example)))))
    noise = data.draw(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=20))
    line = "".join(c.upper() if data.draw(st.booleans()) else c for c in noise + example[a:] + example[:b])
    if line.isascii() and row.pattern.search(line):
        assert not words or any(word in line.lower() for word in words), (row.kind, line, words)


def test_non_ascii_text_is_searched_row_by_row():
    # U+017F matches 's' case-blind: a lowered needle test would miss it, so such text skips the words
    line = "Connection refu\u017fed"
    assert re.search("connection refused", line, re.IGNORECASE)
    matcher = signatures._Matcher()
    assert getattr(matcher.match(ROWS, line), "kind", None) == getattr(signatures.match(line), "kind", None)
