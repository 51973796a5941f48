"""Issue 30 item 10: the default text report is terse; repeated reasons are one line with a count.

Before: this 9-line paste (an env line, four NCCL INFO lines, a one-row nccl-tests table) gave a 164-line
report in which "no node was read" stood 25 times, in 19 checks of the node the paste cannot show. Now
the checks that share a reason are one line with a count, in the decision path and under Inconclusive;
`--verbose` gives the long form, and the JSON is the same either way."""

from __future__ import annotations

import json

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.report_terse import fold_inconclusive, inconclusive_lines

PASTE = """\
NCCL_P2P_DISABLE=1
gpu01:1234:1234 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
gpu01:1234:1234 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB
gpu01:1234:1234 [0] NCCL INFO Using network IB
gpu01:1234:1234 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
   8589934592    2147483648     float     sum      -1   400000   21.47   20.13      0   400000   21.47   20.13      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 20.13
"""
NO_NODE = "no node was read (diagnosing pasted evidence only)"


@pytest.fixture
def paste(tmp_path) -> str:
    path = tmp_path / "paste.txt"
    path.write_text(PASTE)
    return str(path)


def report(capsys, *argv: str) -> tuple[int, str]:
    code = main(["diagnose", *argv])
    return code, capsys.readouterr().out


def test_the_default_report_folds_the_repeated_reason(capsys, paste):
    code, terse = report(capsys, "--evidence", paste)
    _, verbose = report(capsys, "--verbose", "--evidence", paste)
    assert code == 1
    assert (len(terse.splitlines()), len(verbose.splitlines())) == (82, 161)
    assert (terse.count(NO_NODE), verbose.count(NO_NODE)) == (2, 25)
    lines = terse.splitlines()
    assert f"  [ ?? ] 19 checks undecided: {NO_NODE} (see Inconclusive)" in lines
    assert "  [n.a.] 3 checks not judged: not shown in the text: no line of it is one this check reads" in lines
    assert (f"  - 19 checks: {NO_NODE}; paste `ibstat` (or `ibv_devinfo`), `sudo dmesg`, `nvidia-smi nvlink -s`, "
            "`nvidia-smi -q`, `sudo lspci -vvv`, `nvidia-smi topo -m` (--verbose lists each)") in lines
    # what decides is never folded: the failing step and its value stay
    at = lines.index("  [FAIL] No leftover setting forbids intra-node P2P")
    assert lines[at + 2] == '         value: {"nccl.env.vars.NCCL_P2P_DISABLE": "1"}'


def test_verbose_lists_every_check(capsys, paste):
    _, verbose = report(capsys, "--verbose", "--evidence", paste)
    assert "  - trunk.ports_active: rdma.compute_ports is missing: rdma.ports: " + NO_NODE in verbose
    assert "  [ ?? ] Every compute port is ACTIVE\n" in verbose
    assert "checks undecided" not in verbose and "(--verbose lists each)" not in verbose


def test_the_json_is_not_folded(capsys, paste):
    _, plain = report(capsys, "--evidence", paste, "--format", "json")
    _, verbose = report(capsys, "--verbose", "--evidence", paste, "--format", "json")
    a, b = json.loads(plain), json.loads(verbose)
    a["context"].pop("generated_at", None), b["context"].pop("generated_at", None)
    assert a == b and len(a["inconclusive"]) == 22


def test_two_checks_sharing_a_reason_stay_two_lines():
    items = [{"node": "a", "reason": "x.y is missing: dmesg needs root"},
             {"node": "b", "reason": "z is missing: dmesg needs root"}]
    assert fold_inconclusive(items) == {}
    assert inconclusive_lines(items) == ["  - a: x.y is missing: dmesg needs root", "  - b: z is missing: dmesg needs root"]


def test_a_fact_name_never_heads_a_fold():
    items = [{"node": n, "reason": f"rdma.compute_ports is missing: rdma.ports: reason {n}"} for n in "abc"]
    assert fold_inconclusive(items) == {}
