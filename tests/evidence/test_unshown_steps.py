"""A check of the log's runbook that passed with no line of the text behind it judged nothing: the
decision path says n.a. ("not shown in the text: no line of it is one this check reads"), never pass, so a path
cannot read "NCCL's bootstrap interface is one the peers can reach" beside a candidate that says it is
not (evidence/differential.py _unshown). A check that read lines keeps its pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from allreduce_doctor.evidence.differential import UNSHOWN
from tests.evidence.helpers import diagnose_json

WORDS_ONLY = """\
NCCL error when training on two machines
It works fine on a single node, but with 2 nodes init fails.
"""
# Two hosts bootstrapping over routed interfaces: the interface step read them.
ROUTED = """\
node-a:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node-b:200:200 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>
node-a:100:100 [0] NCCL INFO NET/IB : No device found.
node-a:100:100 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
"""


def _steps(data: dict) -> dict[str, tuple[str, str]]:
    return {s["node"]: (s["badge"], s["means"]) for s in data["path"]}


def test_words_only_leave_every_log_check_unjudged(tmp_path):
    rc, data, _ = diagnose_json(tmp_path, WORDS_ONLY)
    steps = _steps(data)
    assert rc == 3 and data["root_cause"]["id"] == "wrong_socket_ifname"
    assert steps["nccl_log.socket_iface"] == ("n.a.", UNSHOWN)
    assert steps["nccl_log.versions"] == ("n.a.", UNSHOWN)
    log_steps = [badge for node, (badge, _) in steps.items() if node.startswith("nccl_log.")]
    assert log_steps and "pass" not in log_steps
    # the step outcome itself is kept: only its badge and meaning say it judged nothing
    assert next(s for s in data["path"] if s["node"] == "nccl_log.socket_iface")["outcome"] == "no"


def test_a_check_that_read_lines_still_passes(tmp_path):
    _, data, _ = diagnose_json(tmp_path, ROUTED)
    badge, means = _steps(data)["nccl_log.socket_iface"]
    assert badge == "pass" and means != UNSHOWN


def test_the_text_report_shows_the_unjudged_steps_without_values(tmp_path):
    paste = tmp_path / "report.txt"
    paste.write_text(WORDS_ONLY)
    src = str(Path(__file__).resolve().parents[2] / "src")  # this tree's code, not an installed copy
    # --verbose: the long form lists every step (the terse default folds the unshown ones: test_terse_report.py)
    out = subprocess.run([sys.executable, "-m", "allreduce_doctor", "diagnose", "--verbose", "--evidence", str(paste)],
                         capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": src}).stdout
    at = out.index("[n.a.] NCCL's bootstrap interface is one the peers can reach")
    assert out[at:].splitlines()[1].strip() == f"-> {UNSHOWN}"
    assert "[pass] NCCL's bootstrap interface is one the peers can reach" not in out


def test_a_check_passes_only_when_every_fact_it_read_was_shown(tmp_path):
    # A 2-node nccl-tests table tells the scope (two hosts), no NCCL line tells the transport: "NCCL uses
    # RDMA, not TCP sockets" read log.job.scope from the table and log.nccl.network from nothing, so it
    # judged nothing (issue 29 item 3: a step with no observed value is not [pass]).
    from tests.evidence.test_confidence_earned import TABLE

    _, data, _ = diagnose_json(tmp_path, TABLE)
    steps = _steps(data)
    assert steps["nccl_log.socket"] == ("n.a.", UNSHOWN)
    assert steps["nccl_log.libibverbs"] == ("n.a.", UNSHOWN)
