from __future__ import annotations

import pytest

from tests.export.fakeserver import FakeTracker

TOKEN_VARS = ("GH_TOKEN", "GITHUB_TOKEN", "JIRA_API_TOKEN", "JIRA_PAT", "JIRA_EMAIL",
              "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy")


@pytest.fixture
def tracker():
    with FakeTracker() as server:
        yield server


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    """No token, proxy or config of the person running the tests leaks in."""
    for name in TOKEN_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
