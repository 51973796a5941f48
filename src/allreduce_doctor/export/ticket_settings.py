"""Where and how to file a ticket: flags over a small TOML file in the user's config directory
($XDG_CONFIG_HOME/allreduce-doctor/tickets.toml, else ~/.config/...). Tokens come only from the
environment: the file may not hold one, and no token is ever printed or written.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.suggest import closest, hint

CONFIG_NAME = "tickets.toml"
KEYS = {
    "github": {"repo": str, "base_url": str, "labels": list},
    "jira": {"base_url": str, "project": str, "issue_type": str, "labels": list, "priority": str,
             "components": list, "auth": str, "email": str},
}
TOKEN_ENV = {"github": ("GH_TOKEN", "GITHUB_TOKEN"), "cloud": ("JIRA_API_TOKEN",), "datacenter": ("JIRA_PAT",)}
GITHUB_API = "https://api.github.com"
# GitHub refuses a longer label name: 422 "name is too long (maximum is 50 characters)"
# (REST API, POST /repos/{owner}/{repo}/issues and /labels).
GITHUB_LABEL_MAX = 50
_SECRETISH = re.compile(r"token|secret|password|passwd|api_?key|\bpat\b|credential", re.I)
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class SettingsError(DoctorError):
    """Posting is not configured well enough to file a ticket."""


@dataclass
class PostSettings:
    service: str  # github | jira
    base_url: str
    token: str = field(repr=False)  # from the environment only; never printed
    repo: str = ""
    project: str = ""
    issue_type: str = "Bug"
    labels: list[str] = field(default_factory=list)
    priority: str = ""
    components: list[str] = field(default_factory=list)
    auth: str = ""  # jira: cloud | datacenter
    email: str = ""
    api_version: int = 2  # jira: 2 (wiki markup) or 3 (ADF)
    attach: str | None = None  # the bundle to attach (jira)
    token_env: str = ""  # which variable the token came from, for messages


def config_path(env=os.environ) -> Path:
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "allreduce-doctor" / CONFIG_NAME


def load_config(path: Path, explicit: bool) -> dict:
    """The [github] and [jira] tables of the config file ({} when the default file is absent)."""
    if not path.is_file():
        if explicit:
            raise SettingsError(f"--config {path}: no such file")
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise SettingsError(f"{path}: cannot read: {getattr(err, 'strerror', None) or err}") from None
    except tomllib.TOMLDecodeError as err:
        raise SettingsError(f"{path}: not valid TOML: {err}") from None
    for table, values in data.items():
        if table not in KEYS or not isinstance(values, dict):
            raise SettingsError(f"{path}: unknown table [{table}] (have: [github], [jira])")
        for key, value in values.items():
            if _SECRETISH.search(key):
                raise SettingsError(f"{path}: [{table}] {key}: tokens are read only from the environment "
                                    f"({', '.join(_token_names(table))}), never from a file")
            if key not in KEYS[table]:
                near = closest(key, KEYS[table])
                what = hint(near) if near else f" (have: {', '.join(sorted(KEYS[table]))})"
                raise SettingsError(f"{path}: [{table}] unknown key {key}{what}")
            want = KEYS[table][key]
            if not isinstance(value, want) or (want is list and not all(isinstance(v, str) for v in value)):
                kind = "a list of strings" if want is list else "a string"
                raise SettingsError(f"{path}: [{table}] {key}: expected {kind}")
    return data


def _token_names(table: str) -> list[str]:
    return list(TOKEN_ENV["github"]) if table == "github" else [*TOKEN_ENV["cloud"], *TOKEN_ENV["datacenter"]]


def check_base_url(url: str, where: str) -> str:
    """A base URL a token may be sent to: https, or plain http only to this machine (tests)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise SettingsError(f"{where} {url}: expected a URL such as https://jira.example.com")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise SettingsError(f"{where} {url}: refusing to send a token over plain http; use https")
    return url.rstrip("/")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _token(names: tuple[str, ...], env, service: str, what: str) -> tuple[str, str]:
    for name in names:
        token = env.get(name, "").strip()
        if token:
            if any(ch.isspace() or not ch.isprintable() for ch in token):
                raise SettingsError(f"{name}: the token holds whitespace or control characters; set it to the token alone")
            return token, name
    raise SettingsError(f"--post {service}: no token: set {' or '.join(names)} ({what})")


def resolve(args, fmt: str | None, env=os.environ) -> PostSettings:
    """Settings for `export --post SERVICE`: flags win over the config file; token from env."""
    explicit = bool(getattr(args, "config", None))
    path = Path(args.config) if explicit else config_path(env)
    conf = load_config(path, explicit).get(args.post, {})
    where = f"in [{args.post}] of {path}"

    def pick(flag, key, default=""):
        return flag if flag not in (None, "", []) else conf.get(key, default)

    labels = [*conf.get("labels", []), *(args.label or [])]
    if args.post == "github":
        if fmt not in (None, "github"):
            raise SettingsError(f"--post github files the github format; drop --to {fmt}")
        repo = pick(args.repo, "repo")
        if not repo:
            raise SettingsError(f"--post github needs a repository: --repo OWNER/REPO, or repo {where}")
        if not _REPO.match(repo):
            raise SettingsError(f"--repo {repo}: expected OWNER/REPO")
        for label in labels:
            if len(label) > GITHUB_LABEL_MAX:
                raise SettingsError(f"--label {label!r}: GitHub labels are at most {GITHUB_LABEL_MAX} characters "
                                    f"(this one has {len(label)})")
        token, name = _token(TOKEN_ENV["github"], env, "github", f"a token that may create issues in {repo}")
        return PostSettings("github", check_base_url(pick(args.base_url, "base_url", GITHUB_API), "--base-url"),
                            token, repo=repo, labels=labels, token_env=name)
    if fmt not in (None, "jira", "jira-adf"):
        raise SettingsError(f"--post jira files --to jira (REST API v2, wiki markup) or --to jira-adf (v3); not {fmt}")
    base_url = pick(args.base_url, "base_url")
    if not base_url:
        raise SettingsError(f"--post jira needs the Jira base URL: --base-url https://example.atlassian.net, or base_url {where}")
    base_url = check_base_url(base_url, "--base-url")
    project = pick(args.project, "project")
    if not project:
        raise SettingsError(f"--post jira needs a project key: --project KEY, or project {where}")
    for label in labels:
        if not label or any(ch.isspace() for ch in label):
            raise SettingsError(f"--label {label!r}: Jira labels cannot be empty or contain spaces")
    auth = pick(args.jira_auth, "auth") or ("cloud" if (urlsplit(base_url).hostname or "").endswith(".atlassian.net") else "datacenter")
    if auth not in ("cloud", "datacenter"):
        raise SettingsError(f"auth {auth!r} {where}: expected cloud or datacenter")
    api_version = 3 if fmt == "jira-adf" else 2
    if auth == "datacenter" and api_version == 3:
        raise SettingsError("--to jira-adf needs REST API v3, which Jira Data Center does not have; use --to jira")
    email = ""
    if auth == "cloud":
        email = pick(args.jira_email, "email") or env.get("JIRA_EMAIL", "")
        if not email:
            raise SettingsError(f"--post jira (Cloud) needs the account email: --jira-email, JIRA_EMAIL, or email {where}")
        token, name = _token(TOKEN_ENV["cloud"], env, "jira", f"an API token of {email}")
    else:
        token, name = _token(TOKEN_ENV["datacenter"], env, "jira", "a Data Center personal access token")
    return PostSettings("jira", base_url, token, project=project, issue_type=pick(args.issue_type, "issue_type", "Bug"),
                        labels=labels, priority=pick(args.priority, "priority"),
                        components=list(args.component or conf.get("components", [])), auth=auth, email=email,
                        api_version=api_version, token_env=name)
