"""The HTTP client a tracker is filed through (urllib only): one request per step, never retried
blindly, every failure one line with what the server said. Redirects are not followed, so the
Authorization header can never be replayed to another host; tokens are scrubbed from every message.
"""

from __future__ import annotations

import json
import os
import secrets
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlencode

from allreduce_doctor import __version__
from allreduce_doctor.errors import DoctorError

TIMEOUT = 30.0


def wire_json(value) -> str:
    """A request body exactly as it is sent: compact, UTF-8. Size limits are measured on this text."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
MAX_RESPONSE = 8 * 1024 * 1024


class PostError(DoctorError):
    """The tracker refused the ticket or could not be reached."""


@dataclass
class Filed:
    url: str  # the ticket's web address
    key: str  # GitHub issue number or Jira issue key
    action: str  # created | commented
    note: str = ""  # one line for stderr: what was done


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D401 - urllib's hook
        return None  # urllib then raises HTTPError for the 3xx, which we report


def _message(raw: bytes) -> str:
    """What the server said: GitHub's message/errors, Jira's errorMessages/errors, or the text."""
    try:
        data = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        data = None
    parts: list[str] = []
    if isinstance(data, dict):
        if isinstance(data.get("message"), str):
            parts.append(data["message"])
        parts += [m for m in data.get("errorMessages") or [] if isinstance(m, str)]
        errors = data.get("errors")
        if isinstance(errors, dict):
            parts += [f"{k}: {v}" for k, v in errors.items()]
        elif isinstance(errors, list):
            for e in errors:
                if isinstance(e, dict):
                    parts.append(e.get("message") or " ".join(str(e.get(k)) for k in ("resource", "field", "code") if e.get(k)))
                elif isinstance(e, str):
                    parts.append(e)
    if not parts:
        parts = [raw.decode("utf-8", "replace")]
    text = " ".join("; ".join(p for p in parts if p).split())
    return (text[:400] + "...") if len(text) > 400 else (text or "no message")


class Client:
    """JSON over HTTP to one base URL with one Authorization header."""

    def __init__(self, service: str, base_url: str, auth: str, secret: str, hints: dict[int, str] | None = None,
                 headers: dict[str, str] | None = None, timeout: float = TIMEOUT):
        self.service, self.base_url, self.timeout = service, base_url, timeout
        self._auth, self._secret, self.hints = auth, secret, hints or {}
        self.headers = {"Accept": "application/json", "User-Agent": f"allreduce-doctor/{__version__}", **(headers or {})}
        self._opener = urllib.request.build_opener(_NoRedirect)

    def _scrub(self, text: str) -> str:
        for secret in (self._auth, self._auth.partition(" ")[2], self._secret):
            if secret:
                text = text.replace(secret, "<redacted>")
        return text

    def fail(self, what: str) -> PostError:
        return PostError(self._scrub(f"{self.service}: {what}"))

    def call(self, method: str, path: str, query: dict | None = None, payload=None, body: bytes | None = None,
             content_type: str = "", headers: dict | None = None):
        """The parsed JSON answer (None for an empty one); PostError for anything else."""
        url = self.base_url + path + (f"?{urlencode(query)}" if query else "")
        data = wire_json(payload).encode("utf-8") if payload is not None else body
        hdrs = {**self.headers, "Authorization": self._auth, **(headers or {})}
        if payload is not None or content_type:
            hdrs["Content-Type"] = content_type or "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=hdrs)
        step = f"{method} {path}"
        try:
            with self._opener.open(request, timeout=self.timeout) as resp:
                status, raw = resp.status, resp.read(MAX_RESPONSE)
        except urllib.error.HTTPError as err:
            raw = err.read(MAX_RESPONSE) if err.fp else b""
            hint = self.hints.get(err.code, "")
            if 300 <= err.code < 400:
                hint = f"the server redirects to {err.headers.get('Location', '?')}: use that base URL"
            raise self.fail(f"{step}: HTTP {err.code} {err.reason}: {_message(raw)}" + (f" ({hint})" if hint else "")) from None
        except urllib.error.URLError as err:
            reason = err.reason.strerror if isinstance(err.reason, OSError) and err.reason.strerror else err.reason
            raise self.fail(f"cannot reach {self.base_url}: {reason}") from None
        except TimeoutError:
            raise self.fail(f"{step}: no answer within {self.timeout:g} s") from None
        except OSError as err:
            raise self.fail(f"{step}: connection failed: {err.strerror or err}") from None
        if not raw.strip():
            return None
        try:
            return json.loads(raw.decode("utf-8"))
        except ValueError:
            raise self.fail(f"{step}: HTTP {status} answered with something that is not JSON: {_message(raw)[:120]}") from None


def multipart(field: str, filename: str, data: bytes) -> tuple[bytes, str]:
    """A multipart/form-data body with one file part, and its Content-Type."""
    boundary = f"allreduce-doctor-{secrets.token_hex(16)}"
    name = "".join(ch for ch in os.path.basename(filename) if ch not in '"\\\r\n') or "bundle"
    kind = "application/gzip" if name.endswith((".tar.gz", ".tgz", ".gz")) else "application/octet-stream"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{name}\"\r\n"
            f"Content-Type: {kind}\r\n\r\n").encode()
    return head + data + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"
