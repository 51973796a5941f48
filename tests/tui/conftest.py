import pytest

from tests.tui.helpers import ROOT


@pytest.fixture(autouse=True)
def _at_root(monkeypatch):
    """Bundle paths are shown on screen: run from the repository root so they are stable."""
    monkeypatch.chdir(ROOT)
