"""`export --post jira` end to end against a recording tracker on 127.0.0.1: Cloud and Data
Center, REST API v2 (wiki markup) and v3 (ADF), the duplicate search, the bundle attachment."""

from __future__ import annotations

import base64
import email.parser
import email.policy
import json

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.export.jira_wiki import escape
from allreduce_doctor.export.ticket import build_ticket
from tests.export.adf_schema import validate
from tests.export.goldens import GOLDEN, ROOT, stored_diagnosis

TOKEN = "jira-api-token-0123456789abcdef"
PAT = "NjAzMTI0ODk1MjA2OkpJUkEtcGF0LXRva2Vu"
EMAIL = "oncall@acme.com"
BUNDLE = ROOT / "tests/fixtures/scenarios/roce-pfc-off/bundle.tar.gz"
JQL = 'labels = "{fp}" AND statusCategory != Done'


@pytest.fixture
def diag(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the diagnosis names its bundle relative to the repository
    path = tmp_path / "diag.json"
    path.write_text(json.dumps(stored_diagnosis("roce-pfc-off")))
    return str(path)


@pytest.fixture
def ticket():
    return build_ticket(stored_diagnosis("roce-pfc-off"))


def cloud(monkeypatch):
    monkeypatch.setenv("JIRA_API_TOKEN", TOKEN)
    monkeypatch.setenv("JIRA_EMAIL", EMAIL)


def post(capsys, tracker, diag, *extra):
    code = main(["export", "--post", "jira", "--base-url", tracker.url, "--project", "OPS", *extra, diag])
    out, err = capsys.readouterr()
    assert TOKEN not in out + err and PAT not in out + err
    return code, out, err


def parts(request) -> list:
    """The multipart/form-data parts: (field name, file name, content type, bytes)."""
    head = f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode()
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + request.body)
    return [(p.get_param("name", header="content-disposition"), p.get_filename(), p.get_content_type(),
             p.get_payload(decode=True)) for p in msg.iter_parts()]


def test_cloud_v2_creates_the_issue_and_attaches_the_bundle(capsys, tracker, diag, ticket, monkeypatch):
    cloud(monkeypatch)
    tracker.route("GET", "/rest/api/2/search/jql", 200, {"issues": [], "isLast": True})
    tracker.route("POST", "/rest/api/2/issue", 201, {"id": "10042", "key": "OPS-12", "self": f"{tracker.url}/rest/api/2/issue/10042"})
    tracker.route("POST", "/rest/api/2/issue/OPS-12/attachments", 200, [{"id": "1", "filename": "bundle.tar.gz"}])
    code, out, err = post(capsys, tracker, diag, "--jira-auth", "cloud", "--priority", "High", "--component", "GPU fabric",
                          "--label", "gpu-fabric", "--issue-type", "Incident")
    assert (code, out) == (0, f"{tracker.url}/browse/OPS-12\n")
    assert err == f"allreduce-doctor: filed OPS-12 with fingerprint {ticket.fingerprint}; attached bundle.tar.gz\n"
    assert tracker.calls() == [("GET", "/rest/api/2/search/jql"), ("POST", "/rest/api/2/issue"),
                               ("POST", "/rest/api/2/issue/OPS-12/attachments")]
    basic = "Basic " + base64.b64encode(f"{EMAIL}:{TOKEN}".encode()).decode()
    assert {r.headers["authorization"] for r in tracker.requests} == {basic}
    search, create, attach = tracker.requests
    assert search.query == {"jql": JQL.format(fp=ticket.fingerprint), "fields": "key,summary", "maxResults": "5"}
    assert create.json == {"fields": {
        "project": {"key": "OPS"}, "issuetype": {"name": "Incident"}, "summary": ticket.title,
        "description": (GOLDEN / "roce-pfc-off" / "jira.txt").read_text(),
        "labels": ["allreduce-doctor", "pfc_not_enabled", ticket.fingerprint, "gpu-fabric"],
        "priority": {"name": "High"}, "components": [{"name": "GPU fabric"}]}}
    assert attach.headers["x-atlassian-token"] == "no-check"
    assert parts(attach) == [("file", "bundle.tar.gz", "application/gzip", BUNDLE.read_bytes())]


def test_cloud_v3_sends_an_adf_description(capsys, tracker, diag, ticket, monkeypatch):
    cloud(monkeypatch)
    tracker.route("GET", "/rest/api/3/search/jql", 200, {"issues": []})
    tracker.route("POST", "/rest/api/3/issue", 201, {"id": "1", "key": "OPS-13"})
    tracker.route("POST", "/rest/api/3/issue/OPS-13/attachments", 200, [])
    code, out, _ = post(capsys, tracker, diag, "--to", "jira-adf", "--jira-auth", "cloud", "--no-attach")
    assert (code, out) == (0, f"{tracker.url}/browse/OPS-13\n")
    assert tracker.calls() == [("GET", "/rest/api/3/search/jql"), ("POST", "/rest/api/3/issue")]
    description = tracker.requests[1].json["fields"]["description"]
    assert description == json.loads((GOLDEN / "roce-pfc-off" / "jira-adf.json").read_text())
    assert validate(description) == []


def test_duplicate_gets_a_comment_and_the_bundle(capsys, tracker, diag, ticket, monkeypatch):
    cloud(monkeypatch)
    tracker.route("GET", "/rest/api/2/search/jql", 200, {"issues": [{"id": "9", "key": "OPS-7", "fields": {"summary": "x"}}]})
    tracker.route("POST", "/rest/api/2/issue/OPS-7/comment", 201, {"id": "100"})
    tracker.route("POST", "/rest/api/2/issue/OPS-7/attachments", 200, [])
    code, out, err = post(capsys, tracker, diag, "--jira-auth", "cloud")
    assert (code, out) == (0, f"{tracker.url}/browse/OPS-7\n")
    assert err == (f"allreduce-doctor: open issue OPS-7 has fingerprint {ticket.fingerprint}: added a comment instead "
                   "of a duplicate; attached bundle.tar.gz\n")
    assert tracker.calls() == [("GET", "/rest/api/2/search/jql"), ("POST", "/rest/api/2/issue/OPS-7/comment"),
                               ("POST", "/rest/api/2/issue/OPS-7/attachments")]
    body = tracker.requests[1].json["body"]
    assert body.startswith("*Seen again* by allreduce-doctor on gpu-node-017 (snapshot bundle tests/fixtures/")
    assert f"the same fingerprint {{{{{escape(ticket.fingerprint)}}}}}, so this is a comment" in body


def test_data_center_uses_a_bearer_token_and_v2_search(capsys, tracker, diag, monkeypatch, tmp_path):
    monkeypatch.setenv("JIRA_PAT", PAT)
    other = tmp_path / "node \"7\".tar.gz"
    other.write_bytes(b"\x1f\x8b not really a bundle")
    tracker.route("GET", "/rest/api/2/search", 200, {"issues": [], "total": 0})
    tracker.route("POST", "/rest/api/2/issue", 201, {"id": "1", "key": "OPS-1"})
    tracker.route("POST", "/rest/api/2/issue/OPS-1/attachments", 200, [])
    code, out, _ = post(capsys, tracker, diag, "--attach", str(other))  # not *.atlassian.net: Data Center
    assert (code, out) == (0, f"{tracker.url}/browse/OPS-1\n")
    assert tracker.calls() == [("GET", "/rest/api/2/search"), ("POST", "/rest/api/2/issue"),
                               ("POST", "/rest/api/2/issue/OPS-1/attachments")]
    assert {r.headers["authorization"] for r in tracker.requests} == {f"Bearer {PAT}"}
    assert parts(tracker.requests[2]) == [("file", "node 7.tar.gz", "application/gzip", other.read_bytes())]


def test_a_failed_attachment_names_the_ticket_that_was_filed(capsys, tracker, diag, monkeypatch):
    monkeypatch.setenv("JIRA_PAT", PAT)
    tracker.route("GET", "/rest/api/2/search", 200, {"issues": []})
    tracker.route("POST", "/rest/api/2/issue", 201, {"id": "1", "key": "OPS-1"})
    tracker.route("POST", "/rest/api/2/issue/OPS-1/attachments", 500, {"errorMessages": ["Internal server error"]})
    code, out, err = post(capsys, tracker, diag, "--jira-auth", "datacenter")
    assert (code, out) == (2, "")
    assert err == (f"allreduce-doctor: error: jira: created {tracker.url}/browse/OPS-1, but attaching bundle.tar.gz failed: "
                   "POST /rest/api/2/issue/OPS-1/attachments: HTTP 500 Internal Server Error: Internal server error\n")
    assert len(tracker.requests) == 3


@pytest.mark.parametrize("step, status, answer, message", [
    ("search", 401, {"errorMessages": ["You are not authenticated. Authentication required to perform this operation."]},
     "jira: GET /rest/api/2/search/jql: HTTP 401 Unauthorized: You are not authenticated. Authentication required to "
     f"perform this operation. (check {EMAIL} with the API token in JIRA_API_TOKEN)"),
    ("create", 404, {"errorMessages": ["No project could be found with key 'OPS'."], "errors": {}},
     "jira: POST /rest/api/2/issue: HTTP 404 Not Found: No project could be found with key 'OPS'. "
     "(check the base URL and project OPS)"),
    ("create", 400, {"errorMessages": [], "errors": {"project": "valid project is required", "issuetype": "valid issue type is required"}},
     "jira: POST /rest/api/2/issue: HTTP 400 Bad Request: project: valid project is required; issuetype: valid issue type is required"),
    ("search", 500, b"Internal Server Error",
     "jira: GET /rest/api/2/search/jql: HTTP 500 Internal Server Error: Internal Server Error"),
])
def test_server_errors_are_one_line_and_never_retried(capsys, tracker, diag, monkeypatch, step, status, answer, message):
    cloud(monkeypatch)
    if step == "search":
        tracker.route("GET", "/rest/api/2/search/jql", status, answer)
    else:
        tracker.route("GET", "/rest/api/2/search/jql", 200, {"issues": []})
        tracker.route("POST", "/rest/api/2/issue", status, answer)
    code, out, err = post(capsys, tracker, diag, "--jira-auth", "cloud")
    assert (code, out, err) == (2, "", f"allreduce-doctor: error: {message}\n")
    assert len(tracker.requests) == (1 if step == "search" else 2)


def test_missing_token_email_or_settings(capsys, tracker, diag, monkeypatch):
    assert post(capsys, tracker, diag, "--jira-auth", "datacenter")[2] == \
        "allreduce-doctor: error: --post jira: no token: set JIRA_PAT (a Data Center personal access token)\n"
    assert post(capsys, tracker, diag, "--jira-auth", "cloud")[2].startswith(
        "allreduce-doctor: error: --post jira (Cloud) needs the account email: --jira-email, JIRA_EMAIL, or email in [jira] of ")
    monkeypatch.setenv("JIRA_EMAIL", EMAIL)
    assert post(capsys, tracker, diag, "--jira-auth", "cloud")[2] == \
        f"allreduce-doctor: error: --post jira: no token: set JIRA_API_TOKEN (an API token of {EMAIL})\n"
    monkeypatch.setenv("JIRA_PAT", PAT)
    assert post(capsys, tracker, diag, "--jira-auth", "datacenter", "--to", "jira-adf")[2] == (
        "allreduce-doctor: error: --to jira-adf needs REST API v3, which Jira Data Center does not have; use --to jira\n")
    assert post(capsys, tracker, diag, "--to", "markdown")[2] == ("allreduce-doctor: error: --post jira files --to jira "
                                                                  "(REST API v2, wiki markup) or --to jira-adf (v3); not markdown\n")
    assert post(capsys, tracker, diag, "--jira-auth", "datacenter", "--label", "gpu fabric")[2] == \
        "allreduce-doctor: error: --label 'gpu fabric': Jira labels cannot be empty or contain spaces\n"
    assert post(capsys, tracker, diag, "--jira-auth", "datacenter", "--attach", "/nonexistent.tar.gz")[2] == \
        "allreduce-doctor: error: --attach /nonexistent.tar.gz: no such file\n"
    assert tracker.requests == []


def test_settings_from_the_config_file(capsys, tracker, diag, ticket, monkeypatch, tmp_path):
    monkeypatch.setenv("JIRA_API_TOKEN", TOKEN)
    conf = tmp_path / "config" / "allreduce-doctor"
    conf.mkdir(parents=True)
    (conf / "tickets.toml").write_text(
        f'[jira]\nbase_url = "{tracker.url}"\nauth = "cloud"\nemail = "{EMAIL}"\nproject = "NET"\n'
        'issue_type = "Task"\nlabels = ["gpu-fabric"]\npriority = "P1"\ncomponents = ["RoCE"]\n')
    tracker.route("GET", "/rest/api/2/search/jql", 200, {"issues": []})
    tracker.route("POST", "/rest/api/2/issue", 201, {"id": "1", "key": "NET-3"})
    assert main(["export", "--post", "jira", "--no-attach", diag]) == 0
    assert capsys.readouterr().out == f"{tracker.url}/browse/NET-3\n"
    fields = tracker.requests[1].json["fields"]
    assert (fields["project"], fields["issuetype"], fields["priority"], fields["components"]) == \
        ({"key": "NET"}, {"name": "Task"}, {"name": "P1"}, [{"name": "RoCE"}])
    assert fields["labels"] == ["allreduce-doctor", "pfc_not_enabled", ticket.fingerprint, "gpu-fabric"]


def test_the_adf_limit_is_measured_on_what_is_sent(capsys, tracker, diag, monkeypatch):
    from allreduce_doctor.export.client import wire_json
    from allreduce_doctor.export.jira_wiki import JIRA_LIMIT

    cloud(monkeypatch)
    tracker.route("GET", "/rest/api/3/search/jql", 200, {"issues": []})
    tracker.route("POST", "/rest/api/3/issue", 201, {"id": "1", "key": "OPS-13"})
    assert post(capsys, tracker, diag, "--to", "jira-adf", "--jira-auth", "cloud", "--no-attach")[0] == 0
    sent = tracker.requests[1].body.decode("utf-8")
    description = wire_json(json.loads(sent)["fields"]["description"])
    assert description in sent and len(description) <= JIRA_LIMIT
