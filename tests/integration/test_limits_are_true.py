"""Issue 30 item 8: help, limits and exit codes say what the commands do.

Before: `--export`'s help said "also write" (it writes the ticket instead of the report); `healthcheck
--budget 0.05` took 0.54 s and said nothing; `diagnose --interval 0` was refused with "0.1 to 600" and
`-1` with "0 to 600"; `watch` on a node with no RDMA port exited 0 as if healthy; `--answer pcie_gen=99`,
`nvlink_links=40`, `nics_per_node=0` and `validate --max-bytes 99999G` were taken."""

from __future__ import annotations

import re
import time

import pytest

from allreduce_doctor.cli import build_parser, main
from allreduce_doctor.errors import DoctorError
from allreduce_doctor.session import parse_answers
from allreduce_doctor.status import EXIT_BAD_INPUT, EXIT_NOT_APPLICABLE
from allreduce_doctor.tui.watch_model import NO_PORTS
from tests.healthcheck.conftest import EXAMPLES, doctor
from tests.scenarios import nodes as N
from tests.scenarios.build import record


def error_of(capsys, *argv: str) -> str:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT, err
    return err


def test_export_help_says_it_replaces_the_report():
    parser = build_parser("diagnose")
    sub = next(a for a in parser._actions if a.dest == "command").choices["diagnose"]
    export = next(a for a in sub._actions if "--export" in a.option_strings)
    assert export.help == ("write a ticket document in FORMAT instead of the report (see `export --help`); "
                           "not with --format")


@pytest.mark.parametrize("argv, expected", [
    (["diagnose"], "expected 0.1 to 600 seconds"),  # this node: two live samples
    (["diagnose", "--snapshot", str(EXAMPLES / "ib-healthy.tar.gz")], "expected 0 to 600 seconds"),
    (["watch"], "expected 0.1 to 600 seconds"),
    (["collect", "-o", "/nonexistent/x.tar.gz"], "expected 0.1 to 600 seconds"),
    (["fleet", "--nodes", "gpu1"], "expected 0.1 to 600 seconds"),
    (["healthcheck"], "expected 0.1 to 5 seconds (the counter window fits in half of --budget 10)"),
])
def test_zero_and_minus_one_are_refused_with_one_range(capsys, argv, expected):
    """Every value out of the range states the same range: 0 and -1 alike (one function, ranges.check_interval)."""
    for value in ("-1", "700", "nan") + (("0",) if "0.1" in expected else ()):
        assert error_of(capsys, *argv, "--interval", value) == f"allreduce-doctor: error: --interval {value}: {expected}\n"


BUDGET_OVERRUN = re.compile(r"allreduce-doctor: warning: --budget 0\.05 overran: took (\d+\.\d\d) s from the "
                            r"process's start, (\d+\.\d\d) s over; probes not started in time are unknown\n")


def test_a_budget_too_short_to_keep_says_by_how_much_it_overran():
    start = time.monotonic()
    proc = doctor("healthcheck", "--budget", "0.05", "--snapshot", str(EXAMPLES / "ib-healthy.tar.gz"))
    wall = time.monotonic() - start
    assert proc.returncode == 3, proc.stderr  # the probes had no time: unknown, never healthy
    if wall <= 0.05:  # a machine fast enough to keep it says nothing
        assert proc.stderr == ""
        return
    m = BUDGET_OVERRUN.fullmatch(proc.stderr)
    assert m, proc.stderr
    took, over = float(m[1]), float(m[2])
    assert 0.05 < took <= wall + 0.02 and abs(took - 0.05 - over) <= 0.011


def test_a_budget_that_is_kept_prints_nothing_on_stderr():
    proc = doctor("healthcheck", "--budget", "60", "--snapshot", str(EXAMPLES / "ib-healthy.tar.gz"))
    assert (proc.returncode, proc.stderr) == (0, "")


def test_watch_with_no_rdma_port_is_not_applicable(tmp_path, capsys):
    path = tmp_path / "gpu-no-rdma.tar.gz"
    record(N.Node(ports=0, gpus=8), path)
    code = main(["watch", "--snapshot", str(path)])
    out = capsys.readouterr().out
    assert (code, out.splitlines()[-1]) == (EXIT_NOT_APPLICABLE, NO_PORTS)


def test_watch_help_lists_its_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["watch", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "exit codes: 0 done, 2 bad input, 4 no RDMA port to watch, 70 internal error." in help_text


@pytest.mark.parametrize("answer, message", [
    ("pcie_gen=99", "--answer pcie_gen=99: expected 3 to 6"),
    ("nic_pcie_gen=2", "--answer nic_pcie_gen=2: expected 3 to 6"),
    ("nvlink_links=40", "--answer nvlink_links=40: expected 0 to 18"),
    ("nics_per_node=0", "--answer nics_per_node=0: expected 1 to 64"),
    ("nic_pcie_width=3", "--answer nic_pcie_width=3: expected 1, 2, 4, 8, 12, 16, 32"),
    ("nic_rate_gbps=1e9", "--answer nic_rate_gbps=1e9: expected a NIC's line rate in Gb/s, more than 0 and at "
                          "most 1600, e.g. nic_rate_gbps=400"),
    ("nic_rate_gbps=nan", "--answer nic_rate_gbps=nan: expected a NIC's line rate in Gb/s, more than 0 and at "
                          "most 1600, e.g. nic_rate_gbps=400"),
])
def test_hardware_answers_are_range_checked(answer, message):
    with pytest.raises(DoctorError) as err:
        parse_answers([answer], {})
    assert str(err.value) == message


def test_hardware_answers_in_range_are_taken():
    good = ["pcie_gen=5", "nic_pcie_gen=4", "nvlink_links=0", "nvlink_links=18", "nics_per_node=8", "nic_pcie_width=16",
            "nic_rate_gbps=400"]
    assert len(parse_answers(good, {})) == 6


@pytest.mark.parametrize("argv, message", [
    (["healthcheck", "--budget", "nan"], "--budget nan: expected more than 0 and at most 3600 seconds"),
    (["healthcheck", "--budget", "-1"], "--budget -1: expected more than 0 and at most 3600 seconds"),
    (["validate", "--dry-run", "--nodes", "gpu1", "--max-bytes", "2048G"],
     "--max-bytes '2048G': expected a size such as 1M or 8G (K, M, G: powers of 1024), more than 0 and at most 1024G"),
    (["validate", "--dry-run", "--nodes", "gpu1", "--max-seconds", "inf"], "--max-seconds inf: expected 10 to 86400 seconds"),
    (["validate", "--dry-run", "--nodes", "gpu1", "--ranks-per-node", "65"], "--gpus-per-node 65: expected 0 to 64"),
    (["fleet", "--nodes", "gpu1", "--timeout", "nan"], "--timeout nan: expected 1 to 3600 seconds"),
])
def test_every_number_is_range_checked(capsys, argv, message):
    assert error_of(capsys, *argv) == f"allreduce-doctor: error: {message}\n"
