"""A tracker stand-in on 127.0.0.1: http.server in a thread that answers canned JSON per route
and records every request (method, path, query, headers, body). No real service is ever called."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    path: str
    query: dict
    headers: dict  # names in lower case
    body: bytes

    @property
    def json(self):
        return json.loads(self.body) if self.body else None


@dataclass
class Route:
    method: str
    pattern: str
    status: int
    answer: object
    headers: dict = field(default_factory=dict)


class FakeTracker:
    def __init__(self):
        self.requests: list[Request] = []
        self.routes: list[Route] = []
        tracker = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                tracker.requests.append(Request(self.command, parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()},
                                                {k.lower(): v for k, v in self.headers.items()}, body))
                route = next((r for r in tracker.routes if r.method == self.command and re.fullmatch(r.pattern, parts.path)), None)
                status, answer, headers = (route.status, route.answer, route.headers) if route else (404, {"message": "Not Found"}, {})
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _serve

            def log_message(self, *args):  # keep test output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def route(self, method: str, pattern: str, status: int, answer, headers: dict | None = None) -> None:
        self.routes.append(Route(method, pattern, status, answer, headers or {}))

    def __enter__(self) -> FakeTracker:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def calls(self) -> list[tuple[str, str]]:
        return [(r.method, r.path) for r in self.requests]
