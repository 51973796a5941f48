"""Exit codes: each verdict's code through the commands, and the one error handler's lines."""

from __future__ import annotations

import pytest

from allreduce_doctor import status
from allreduce_doctor.cli import main
from allreduce_doctor.errors import BundleError, DoctorError
from allreduce_doctor.runbook.diagnosis import Diagnosis
from allreduce_doctor.session import Session
from tests.fleet.conftest import bundle, lay_out

INTERNAL_TAIL = " (this is a bug; please report it with the command you ran)"


def test_the_codes_are_the_documented_ones():
    assert (status.EXIT_HEALTHY, status.EXIT_FAULT, status.EXIT_BAD_INPUT, status.EXIT_INCONCLUSIVE,
            status.EXIT_NOT_APPLICABLE, status.EXIT_INTERNAL, status.EXIT_INTERRUPTED) == (0, 1, 2, 3, 4, 70, 130)
    assert status.VERDICTS == ("fault", "healthy", "inconclusive", "not_applicable")
    assert {v: status.verdict_exit(v) for v in status.VERDICTS} == {"fault": 1, "healthy": 0, "inconclusive": 3,
                                                                     "not_applicable": 4}
    assert [status.verdict_exit(v) for v in ("FAULT", "", None, 1)] == [3, 3, 3, 3]  # not a verdict: inconclusive


@pytest.mark.parametrize(("scenario", "code"), [("roce-pfc-off", 1), ("ib-healthy", 0)])
def test_diagnose_exits_with_its_verdict(scenario, code, capsys):
    assert main(["diagnose", "--snapshot", str(bundle(scenario)), "--format", "json"]) == code
    assert '"verdict": "%s"' % ("fault" if code else "healthy") in capsys.readouterr().out


def test_an_inconclusive_diagnosis_exits_3(monkeypatch, capsys):
    monkeypatch.setattr(Session, "diagnose", lambda self: Diagnosis(verdict="inconclusive"))
    assert main(["diagnose", "--snapshot", str(bundle("ib-healthy")), "--format", "json"]) == 3
    assert '"verdict": "inconclusive"' in capsys.readouterr().out


def test_fleet_exits_with_the_fleet_verdict(tmp_path, capsys):
    faulty = lay_out(tmp_path / "faulty", {"gpu01": "roce-pfc-off", "gpu02": "roce-healthy", "gpu03": "roce-healthy"})
    healthy = lay_out(tmp_path / "healthy", {"gpu01": "roce-healthy", "gpu02": "roce-healthy"})
    assert main(["fleet", "--snapshots", str(faulty), "--format", "json"]) == 1
    assert main(["fleet", "--snapshots", str(healthy), "--format", "json"]) == 0
    capsys.readouterr()


def _guarded(error: BaseException, capsys) -> tuple[int, str, str]:
    def command() -> int:
        raise error

    code = status.run_guarded(command)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_user_error_is_one_line_and_exit_2(capsys):
    assert _guarded(BundleError("b.tar.gz: member x is damaged;\n  collect it again"), capsys) == (
        2, "", "allreduce-doctor: error: b.tar.gz: member x is damaged; collect it again\n")


def test_an_interrupt_is_130(capsys):
    assert _guarded(KeyboardInterrupt(), capsys) == (130, "", "allreduce-doctor: interrupted\n")


def test_a_closed_pipe_is_quiet_and_0(capsys):
    assert _guarded(BrokenPipeError(), capsys) == (0, "", "")


def test_a_bug_is_one_line_and_exit_70(monkeypatch, capsys):
    monkeypatch.delenv(status.DEBUG_ENV, raising=False)
    assert _guarded(ZeroDivisionError("division by zero"), capsys) == (
        70, "", "allreduce-doctor: internal error: ZeroDivisionError: division by zero" + INTERNAL_TAIL + "\n")


def test_debug_raises_a_bug_but_still_words_a_user_error(monkeypatch, capsys):
    monkeypatch.setenv(status.DEBUG_ENV, "1")
    with pytest.raises(ZeroDivisionError):
        status.run_guarded(lambda: 1 // 0)
    assert _guarded(DoctorError("bad --answer"), capsys) == (2, "", "allreduce-doctor: error: bad --answer\n")


def test_the_command_line_goes_through_the_handler(capsys):
    assert main(["diagnose", "--snapshot", "/no/such/bundle.tar.gz"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("allreduce-doctor: error: /no/such/bundle.tar.gz") and err.count("\n") == 1


def test_the_ui_quits_with_the_same_codes():
    assert status.error_exit(BundleError("x")) == 2 and status.error_exit(KeyError("x")) == 70
