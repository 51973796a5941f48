"""`export --post github` end to end against a recording tracker on 127.0.0.1."""

from __future__ import annotations

import json
import socket

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.export.layout import again
from allreduce_doctor.export.markdown import render_github
from allreduce_doctor.export.ticket import build_ticket
from tests.export.goldens import GOLDEN, stored_diagnosis

TOKEN = "ghp_" + "T3stT0kenT3stT0kenT3stT0kenT3stT0ken"
REPO = "/repos/acme/gpu-incidents"


@pytest.fixture
def diag(tmp_path):
    path = tmp_path / "diag.json"
    path.write_text(json.dumps(stored_diagnosis("roce-pfc-off")))
    return str(path)


def post(capsys, tracker, diag, *extra, base=True):
    argv = ["export", "--post", "github", "--repo", "acme/gpu-incidents", *extra, diag]
    if base:
        argv[1:1] = ["--base-url", tracker.url]
    code = main(argv)
    out, err = capsys.readouterr()
    assert TOKEN not in out + err
    return code, out, err


def test_creates_the_issue_after_searching_for_its_fingerprint(capsys, tracker, diag, monkeypatch):
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    ticket = build_ticket(stored_diagnosis("roce-pfc-off"))
    tracker.route("GET", f"{REPO}/issues", 200, [])
    tracker.route("POST", f"{REPO}/issues", 201, {"number": 12, "html_url": "https://github.com/acme/gpu-incidents/issues/12"})
    code, out, err = post(capsys, tracker, diag, "--label", "gpu-fabric")
    assert (code, out) == (0, "https://github.com/acme/gpu-incidents/issues/12\n")
    assert err == f"allreduce-doctor: filed issue #12 with fingerprint {ticket.fingerprint}\n"
    assert tracker.calls() == [("GET", f"{REPO}/issues"), ("POST", f"{REPO}/issues")]
    search, create = tracker.requests
    assert search.query == {"state": "open", "labels": ticket.fingerprint, "sort": "created", "direction": "asc", "per_page": "10"}
    for request in tracker.requests:
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert request.headers["accept"] == "application/vnd.github+json"
        assert request.headers["x-github-api-version"] == "2022-11-28"
    assert create.json == {"title": ticket.title, "labels": ["allreduce-doctor", "pfc_not_enabled", ticket.fingerprint, "gpu-fabric"],
                           "body": (GOLDEN / "roce-pfc-off" / "github.md").read_text()}


def test_comments_on_the_open_issue_with_the_same_fingerprint(capsys, tracker, diag, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)  # the second variable is read when GH_TOKEN is unset
    ticket = build_ticket(stored_diagnosis("roce-pfc-off"))
    tracker.route("GET", f"{REPO}/issues", 200, [
        {"number": 4, "html_url": "https://github.com/acme/gpu-incidents/pull/4", "pull_request": {"url": "x"},
         "labels": [{"name": ticket.fingerprint}]},
        # a hit without the fingerprint (another incident) is never commented on
        {"number": 7, "html_url": "https://github.com/acme/gpu-incidents/issues/7", "labels": [{"name": "ard-000000000000"}]},
        {"number": 9, "html_url": "https://github.com/acme/gpu-incidents/issues/9",
         "labels": [{"name": "allreduce-doctor"}, {"name": ticket.fingerprint}]}])
    tracker.route("POST", f"{REPO}/issues/9/comments", 201, {"id": 1, "html_url": "https://github.com/acme/gpu-incidents/issues/9#c1"})
    code, out, err = post(capsys, tracker, diag)
    assert (code, out) == (0, "https://github.com/acme/gpu-incidents/issues/9\n")
    assert err == (f"allreduce-doctor: open issue #9 has fingerprint {ticket.fingerprint}: "
                   "added a comment instead of a duplicate\n")
    assert tracker.calls() == [("GET", f"{REPO}/issues"), ("POST", f"{REPO}/issues/9/comments")]
    body = tracker.requests[1].json["body"]
    assert body == render_github(ticket, intro=again(ticket))
    assert body.splitlines()[1] == (
        "**Seen again** by allreduce-doctor on gpu-node-017 (snapshot bundle "
        "tests/fixtures/scenarios/roce-pfc-off/bundle.tar.gz, not recorded): the same fingerprint "
        f"`{ticket.fingerprint}`, so this is a comment, not a new ticket.")


def test_enterprise_base_url(capsys, tracker, diag, monkeypatch):
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    tracker.route("GET", f"/api/v3{REPO}/issues", 200, [])
    tracker.route("POST", f"/api/v3{REPO}/issues", 201, {"number": 1, "html_url": "https://ghe.acme.com/acme/gpu-incidents/issues/1"})
    code, out, _ = post(capsys, tracker, diag, "--base-url", f"{tracker.url}/api/v3/", base=False)
    assert (code, out) == (0, "https://ghe.acme.com/acme/gpu-incidents/issues/1\n")
    assert tracker.calls() == [("GET", f"/api/v3{REPO}/issues"), ("POST", f"/api/v3{REPO}/issues")]


def test_repository_and_base_url_from_the_config_file(capsys, tracker, diag, monkeypatch, tmp_path):
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    conf = tmp_path / "config" / "allreduce-doctor"
    conf.mkdir(parents=True)
    (conf / "tickets.toml").write_text(f'[github]\nrepo = "acme/gpu-incidents"\nbase_url = "{tracker.url}"\nlabels = ["oncall"]\n')
    tracker.route("GET", f"{REPO}/issues", 200, [])
    tracker.route("POST", f"{REPO}/issues", 201, {"number": 2, "html_url": "https://github.com/acme/gpu-incidents/issues/2"})
    assert main(["export", "--post", "github", diag]) == 0
    assert tracker.requests[1].json["labels"][-1] == "oncall"
    capsys.readouterr()


def test_missing_token_stops_before_any_request(capsys, tracker, diag):
    code, out, err = post(capsys, tracker, diag)
    assert (code, out) == (2, "")
    assert err == ("allreduce-doctor: error: --post github: no token: set GH_TOKEN or GITHUB_TOKEN "
                   "(a token that may create issues in acme/gpu-incidents)\n")
    assert tracker.requests == []


@pytest.mark.parametrize("step, status, answer, message", [
    ("search", 401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"},
     f"github: GET {REPO}/issues: HTTP 401 Unauthorized: Bad credentials (check the token in GH_TOKEN)"),
    ("search", 404, {"message": "Not Found"},
     f"github: GET {REPO}/issues: HTTP 404 Not Found: Not Found (check --repo acme/gpu-incidents and that the token can see it)"),
    ("create", 500, b"<html>upstream exploded</html>",
     f"github: POST {REPO}/issues: HTTP 500 Internal Server Error: <html>upstream exploded</html>"),
    ("create", 422, {"message": "Validation Failed", "errors": [{"resource": "Label", "field": "name", "code": "invalid"}]},
     f"github: POST {REPO}/issues: HTTP 422 Unprocessable Entity: Validation Failed; Label name invalid"),
    ("search", 401, {"message": f"token {TOKEN} is revoked"},
     f"github: GET {REPO}/issues: HTTP 401 Unauthorized: token <redacted> is revoked (check the token in GH_TOKEN)"),
])
def test_server_errors_are_one_line_and_never_retried(capsys, tracker, diag, monkeypatch, step, status, answer, message):
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    if step == "search":
        tracker.route("GET", f"{REPO}/issues", status, answer)
    else:
        tracker.route("GET", f"{REPO}/issues", 200, [])
        tracker.route("POST", f"{REPO}/issues", status, answer)
    code, out, err = post(capsys, tracker, diag)
    assert (code, out, err) == (2, "", f"allreduce-doctor: error: {message}\n")
    assert len(tracker.requests) == (1 if step == "search" else 2)  # no retry


def test_a_redirect_is_reported_not_followed(capsys, tracker, diag, monkeypatch):
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    tracker.route("GET", f"{REPO}/issues", 301, {"message": "Moved Permanently"},
                  headers={"Location": "https://elsewhere.example.com/repos/x/y/issues"})
    code, _, err = post(capsys, tracker, diag)
    assert code == 2
    assert err == (f"allreduce-doctor: error: github: GET {REPO}/issues: HTTP 301 Moved Permanently: Moved Permanently "
                   "(the server redirects to https://elsewhere.example.com/repos/x/y/issues: use that base URL)\n")
    assert len(tracker.requests) == 1


def test_unreachable_server_and_plain_http(capsys, diag, monkeypatch):
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["export", "--post", "github", "--repo", "a/b", "--base-url", f"http://127.0.0.1:{port}", diag]) == 2
    assert capsys.readouterr().err == f"allreduce-doctor: error: github: cannot reach http://127.0.0.1:{port}: Connection refused\n"
    assert main(["export", "--post", "github", "--repo", "a/b", "--base-url", "http://ghe.acme.com/api/v3", diag]) == 2
    assert capsys.readouterr().err == ("allreduce-doctor: error: --base-url http://ghe.acme.com/api/v3: refusing to send a "
                                       "token over plain http; use https\n")


def test_a_token_with_a_line_break_is_refused(capsys, diag, monkeypatch):
    monkeypatch.setenv("GH_TOKEN", TOKEN + "\nX-Injected: 1")
    assert main(["export", "--post", "github", "--repo", "a/b", diag]) == 2
    assert capsys.readouterr().err == ("allreduce-doctor: error: GH_TOKEN: the token holds whitespace or control "
                                       "characters; set it to the token alone\n")


def test_wrong_format_or_repository(capsys, diag, monkeypatch):
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    assert main(["export", "--post", "github", "--to", "jira", "--repo", "a/b", diag]) == 2
    assert capsys.readouterr().err == "allreduce-doctor: error: --post github files the github format; drop --to jira\n"
    assert main(["export", "--post", "github", "--repo", "a/b/c", diag]) == 2
    assert capsys.readouterr().err == "allreduce-doctor: error: --repo a/b/c: expected OWNER/REPO\n"
    assert main(["export", "--post", "github", diag]) == 2
    err = capsys.readouterr().err
    assert err.startswith("allreduce-doctor: error: --post github needs a repository: --repo OWNER/REPO, or repo in [github] of ")
    assert err.endswith("/config/allreduce-doctor/tickets.toml\n")


def test_a_hit_without_the_fingerprint_files_a_new_issue(capsys, tracker, diag, monkeypatch):
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    tracker.route("GET", f"{REPO}/issues", 200, [
        {"number": 7, "html_url": "https://github.com/acme/gpu-incidents/issues/7", "labels": [{"name": "ard-000000000000"}]}])
    tracker.route("POST", f"{REPO}/issues", 201, {"number": 10, "html_url": "https://github.com/acme/gpu-incidents/issues/10"})
    code, out, _ = post(capsys, tracker, diag)
    assert (code, out) == (0, "https://github.com/acme/gpu-incidents/issues/10\n")
    assert tracker.calls() == [("GET", f"{REPO}/issues"), ("POST", f"{REPO}/issues")]


def test_a_label_over_githubs_limit_is_refused(capsys, tracker, diag, monkeypatch):
    monkeypatch.setenv("GH_TOKEN", TOKEN)
    code, out, err = post(capsys, tracker, diag, "--label", "x" * 51)
    assert code == 2 and tracker.calls() == []
    assert err == f"allreduce-doctor: error: --label '{'x' * 51}': GitHub labels are at most 50 characters (this one has 51)\n"
