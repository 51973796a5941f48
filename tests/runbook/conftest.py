"""Fixtures for the runbook engine tests."""

import pytest

from allreduce_doctor.runbook import load_runbooks
from tests.runbook.helpers import DATA, FACTS


@pytest.fixture(scope="session")
def example_set():
    return load_runbooks(sorted(DATA.glob("*.yaml")), FACTS, root="trunk")
