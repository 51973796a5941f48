"""Posting settings: the config file is checked key by key; tokens may never live in it."""

from __future__ import annotations

import json

import pytest

from allreduce_doctor.cli import main
from tests.export.goldens import stored_diagnosis


@pytest.fixture
def diag(tmp_path):
    path = tmp_path / "diag.json"
    path.write_text(json.dumps(stored_diagnosis("ib-port-down")))
    return str(path)


def config(tmp_path, text: str):
    path = tmp_path / "config" / "allreduce-doctor" / "tickets.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, message", [
    ('[jira]\napi_token = "abc"\n', "[jira] api_token: tokens are read only from the environment (JIRA_API_TOKEN, JIRA_PAT), never from a file"),
    ('[github]\ntoken = "ghp_x"\n', "[github] token: tokens are read only from the environment (GH_TOKEN, GITHUB_TOKEN), never from a file"),
    ('[jira]\nprojct = "OPS"\n', "[jira] unknown key projct did you mean 'project'?"),
    ('[jira]\nzzz = "OPS"\n', "[jira] unknown key zzz (have: auth, base_url, components, email, issue_type, labels, priority, project)"),
    ('[gitlab]\nrepo = "a/b"\n', "unknown table [gitlab] (have: [github], [jira])"),
    ('[jira]\nlabels = "one"\n', "[jira] labels: expected a list of strings"),
    ('[jira]\nproject = 7\n', "[jira] project: expected a string"),
    ('[jira\nproject = "x"\n', "not valid TOML: Expected ']' at the end of a table declaration (at line 1, column 6)"),
])
def test_bad_config_files(capsys, tmp_path, diag, text, message):
    path = config(tmp_path, text)
    assert main(["export", "--post", "jira", diag]) == 2
    assert capsys.readouterr().err == f"allreduce-doctor: error: {path}: {message}\n"


def test_explicit_config_must_exist_and_values_are_checked(capsys, tmp_path, diag, monkeypatch):
    assert main(["export", "--post", "jira", "--config", str(tmp_path / "none.toml"), diag]) == 2
    assert capsys.readouterr().err == f"allreduce-doctor: error: --config {tmp_path / 'none.toml'}: no such file\n"
    path = config(tmp_path, '[jira]\nbase_url = "ftp://jira.acme.com"\nproject = "OPS"\n')
    assert main(["export", "--post", "jira", "--config", str(path), diag]) == 2
    assert capsys.readouterr().err == "allreduce-doctor: error: --base-url ftp://jira.acme.com: expected a URL such as https://jira.example.com\n"
    config(tmp_path, '[jira]\nbase_url = "https://jira.acme.com"\nproject = "OPS"\nauth = "saml"\n')
    assert main(["export", "--post", "jira", diag]) == 2
    assert capsys.readouterr().err == (f"allreduce-doctor: error: auth 'saml' in [jira] of {path}: "
                                       "expected cloud or datacenter\n")
    config(tmp_path, '[jira]\nbase_url = "https://jira.acme.com"\n')
    assert main(["export", "--post", "jira", diag]) == 2
    assert capsys.readouterr().err == (f"allreduce-doctor: error: --post jira needs a project key: --project KEY, "
                                       f"or project in [jira] of {path}\n")


def test_cloud_is_assumed_for_atlassian_net(capsys, tmp_path, diag, monkeypatch):
    monkeypatch.setenv("JIRA_PAT", "x" * 20)  # a Data Center token does not serve a Cloud site
    config(tmp_path, '[jira]\nbase_url = "https://acme.atlassian.net"\nproject = "OPS"\nemail = "a@acme.com"\n')
    assert main(["export", "--post", "jira", diag]) == 2
    assert capsys.readouterr().err == ("allreduce-doctor: error: --post jira: no token: set JIRA_API_TOKEN "
                                       "(an API token of a@acme.com)\n")
