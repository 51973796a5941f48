"""YAML with locations, and the JSON-safe copies the Diagnosis holds."""

from __future__ import annotations

import json
import math

from allreduce_doctor.runbook.diagnosis import json_safe
from allreduce_doctor.yamlsrc import YMap, YScalar, YSeq, parse_yaml, position_in_scalar

SOURCE = """\
top:
  yes: plain value
  no: 'single ''quoted'''
  list: [a, b]
  block: |
    line one
      indented two
  folded: >
    alpha
    beta
"""


def test_keys_stay_text_and_locations_are_exact():
    doc = parse_yaml(SOURCE, "s.yaml")
    assert isinstance(doc, YMap)
    top = doc.entries["top"][1]
    assert list(top.entries) == ["yes", "no", "list", "block", "folded"]  # not True / False
    key, value = top.entries["yes"]
    assert (key.loc.line, key.loc.col, key.loc.path) == (2, 3, "top.yes")
    assert (value.loc.line, value.loc.col, value.text) == (2, 8, "plain value")
    seq = top.entries["list"][1]
    assert isinstance(seq, YSeq) and [(i.loc.col, i.loc.path) for i in seq.items] == [(10, "top.list[0]"), (13, "top.list[1]")]


def _char_at(source: str, scalar: YScalar, offset: int) -> str:
    line, col = position_in_scalar(source, scalar, offset)
    return source.splitlines()[line - 1][col - 1]


def test_positions_inside_scalars():
    top = parse_yaml(SOURCE, "s.yaml").entries["top"][1]
    for key in ("yes", "no", "block", "folded"):
        scalar = top.entries[key][1]
        for offset, ch in enumerate(scalar.text):
            if not ch.isspace():
                assert _char_at(SOURCE, scalar, offset) == ch, (key, offset)
    folded = top.entries["folded"][1]
    assert position_in_scalar(SOURCE, folded, folded.text.index("beta")) == (10, 5)


def test_json_safe_bounds_and_cleans():
    value = {"nan": float("nan"), "inf": float("inf"), "long": "x" * 600, "list": list(range(25)),
             "tuple": (1, 2), "obj": object, 1: "int key", "deep": [[[[[[["bottom"]]]]]]]}
    safe = json_safe(value)
    json.dumps(safe, allow_nan=False)
    assert safe["nan"] == "nan" and safe["inf"] == "inf"
    assert safe["long"].startswith("x" * 500) and safe["long"].endswith("(100 more characters)")
    assert safe["list"][:20] == list(range(20)) and safe["list"][20] == "... 5 more" and len(safe["list"]) == 21
    assert safe["tuple"] == [1, 2] and safe["1"] == "int key" and safe["obj"] == "<class 'object'>"
    assert "..." in json.dumps(safe["deep"])
    assert json_safe({str(i): i for i in range(45)})["..."] == "5 more keys"
    assert not math.isnan(json_safe(1.5))
