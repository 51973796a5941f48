"""The nccl-tests output grammar (all_reduce_perf and the other collectives, NVIDIA/nccl-tests
src/common.cu): the run header, the rank lines, the result rows (per size: time, algbw, busbw,
#wrong, out-of-place and in-place; old versions print `error`, some collectives have no `redop`
or `root` column), the average bus bandwidth. No verdicts: evidence/tests_table.py reads them.
"""

from __future__ import annotations

import re

PREFIX_RE = re.compile(r"^\s*(?:\[\d+,\d+\]<std(?:out|err)>:|\d{1,6}:\s|\d{4}-\d\d-\d\d[T ][\d:.]+\S*\s+)?")
# `# Collective test starting: %s` with the program's name (NVIDIA/nccl-tests src/common.cu, 2.17 and later).
COLLECTIVE_RE = re.compile(r"^#\s*Collective test starting:\s*(?:\S*/)?([A-Za-z0-9_]+?)(?:_perf\w*)?\s*$")
HEADER_RE = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)")
RANK_RE = re.compile(r"^#\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$")
# NCCL 1.x's own tests (NVIDIA/nccl v1.3.4-1 test/single/*_test.cu) ran every GPU in one process and printed
# `#   Rank %2d uses device %2d [0x%02x] %s`, a `bytes N type op` column header, and their closing lines with no `#`.
RANK_V1_RE = re.compile(r"^#\s*Rank\s+(\d+)\s+uses device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$")
COLUMNS_RE = re.compile(r"^#\s+(?:size\s+count\s+type|bytes\s+N\s+type)\b")
UNITS_RE = re.compile(r"^#\s+\(B\)\s+\(elements\)")
PLACE_RE = re.compile(r"^#\s+out-of-place\s+in-place")
AVG_RE = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*([0-9.]+)")
OOB_RE = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\d+)")
# The header and footer lines nccl-tests prints around its table (src/util.cu, src/common.cu at NVIDIA/nccl-tests
# master: `Reducing maxBytes ... due to memory limitation`, the blocking/per-iteration/parallel-init notes, the JSON
# output notes, `GPU memory usage`, `Collective test concluded`).
START_RE = re.compile(r"^#\s*(?:Collective test (?:starting|concluded)|Using devices|nccl-tests? version|Check|"
                      r"Errors with asterisks|Reducing maxBytes|Blocking Enabled|Per-Iteration Report|"
                      r"Parallel Init Enabled|Writing JSON output|skipping json output|GPU memory usage\s*:)",
                      re.IGNORECASE)
# Header lines whose words are nccl-tests' own, pasted without their `#` (a page rendered from markdown drops it,
# and NCCL 1.x printed its closing lines without one).
UNMARKED_RE = re.compile(r"^\s*[\"'`]?(?:nThread\s+\d+\s+nGpus\s+\d+\s+minBytes\s|Using devices\s*$|Rank\s+\d+\s+(?:uses device|Group\s+\d+\s+Pid|Pid)\s|bytes\s+N\s+type\s+op\b|"  # noqa: E501
                         r"size\s+count\s+type\s|out-of-place\s+in-place\s*$|Out of bounds values\s*:|Avg bus bandwidth\s*:)")
FAIL_RE = re.compile(r"(Test NCCL failure|Test CUDA failure|NCCL failure common|Test failure)\b")
REDOPS = {"sum", "prod", "min", "max", "avg", "none", "mulsum", "premulsum"}
NUM_RE = re.compile(r"^-?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?$")


def _num(token: str) -> float | None:
    return float(token) if NUM_RE.match(token) else None


def _wrong(token: str):
    if token.upper() == "N/A":
        return None
    value = _num(token)
    return None if value is None else (int(value) if value == int(value) else value)


def parse_row(text: str) -> dict | None:
    """One result row, or None. A row cut short keeps its out-of-place half."""
    tokens = text.split()
    if len(tokens) < 7 or not tokens[0].isdigit() or not tokens[1].isdigit() or not tokens[2].isalpha() \
            and not re.match(r"^[a-z]+\d*(_\w+)?$", tokens[2]):
        return None
    rest = tokens[3:]
    redop = root = None
    if rest and rest[0].lower() in REDOPS:
        redop, rest = rest[0], rest[1:]
    if rest and re.fullmatch(r"-?\d+", rest[0]) and len(rest) in (5, 9):
        root, rest = int(rest[0]), rest[1:]
    if len(rest) not in (4, 8):
        return None
    halves = []
    for i in range(0, len(rest), 4):
        t, alg, bus = (_num(x) for x in rest[i:i + 3])
        if t is None or alg is None or bus is None:
            return None
        halves.append({"time_us": t, "algbw": alg, "busbw": bus, "wrong": _wrong(rest[i + 3])})
    row = {"size": int(tokens[0]), "count": int(tokens[1]), "type": tokens[2], "redop": redop, "root": root,
           "out_of_place": halves[0], "in_place": halves[1] if len(halves) > 1 else None}
    return row
