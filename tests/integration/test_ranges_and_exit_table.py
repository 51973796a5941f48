"""Issue 30 item 8 (part): numbers a user gives are range-checked; the README's exit-code table lists
every code status.py defines (validate's 130 was missing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from allreduce_doctor import status
from allreduce_doctor.errors import DoctorError
from allreduce_doctor.session import parse_answers

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.parametrize("value", ["-5", "0", "nan", "inf", "fast"])
def test_measured_busbw_must_be_a_positive_number(value):
    with pytest.raises(DoctorError) as err:
        parse_answers([f"measured_busbw={value}"], {})
    assert str(err.value) == (f"--answer measured_busbw={value}: expected a bus bandwidth in GB/s, more than 0, "
                              "e.g. measured_busbw=350")


def test_a_measured_busbw_is_taken():
    assert parse_answers(["measured_busbw=350"], {})["measured_busbw"] == "350"


def test_readme_exit_table_lists_every_code():
    codes = {status.EXIT_HEALTHY, status.EXIT_FAULT, status.EXIT_BAD_INPUT, status.EXIT_INCONCLUSIVE,
             status.EXIT_NOT_APPLICABLE, status.EXIT_INTERNAL, status.EXIT_INTERRUPTED}
    text = README.read_text()
    table = text[text.index("### Exit codes"):text.index("### JSON")]
    assert {c for c in codes if f"\n| {c} |" in table} == codes
