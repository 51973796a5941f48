"""A ticket leaves the node's trust boundary: every string of the diagnosis passes through the
snapshot redaction (hosts.redact) once more before any renderer sees it, and the places that
changed are recorded (never the values) so the ticket can say what was redacted.

A diagnosis of a live node was already filtered on the node; one read from a file, or built
from pasted evidence, may not have been. Redacting twice is harmless: <redacted> stays itself.
"""

from __future__ import annotations

from allreduce_doctor.hosts.redact import redact_text, redact_value

RULES = ("token-like values (GitHub, Slack, AWS, JWT, Hugging Face, OpenAI keys, private keys), "
         "secret-named variables and assignments (TOKEN, SECRET, PASSWORD, API_KEY, ...), "
         "and credentials in URLs")


def redact_string(name: str, value: str) -> str:
    """`value` with secrets replaced by <redacted>; `name` is the key it sits under."""
    new = redact_value(name, value)
    lines = redact_text(new)  # secret-named NAME=value lines inside a multi-line value
    if lines != new and not new.endswith("\n") and lines.endswith("\n"):
        lines = lines[:-1]
    return lines


def redact_diagnosis(data: dict) -> tuple[dict, list[str]]:
    """A redacted copy of the diagnosis and the places (JSON paths) where something was redacted."""
    places: list[str] = []
    seen: dict[tuple[str, str], str] = {}  # a diagnosis repeats its values (one fact, many checks)

    def redact(name: str, value: str) -> str:
        if (name, value) not in seen:
            seen[name, value] = redact_string(name, value)
        return seen[name, value]

    def walk(value, name: str, where: str):
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                safe_key = redact("", str(key))
                if safe_key != key:
                    places.append(f"{where} (a key)")
                out[safe_key] = walk(item, str(key), f"{where}.{safe_key}" if where else safe_key)
            return out
        if isinstance(value, list):
            return [walk(item, name, f"{where}[{i}]") for i, item in enumerate(value)]
        if isinstance(value, str):
            new = redact(name, value)
            if new != value:
                places.append(where)
            return new
        return value

    return walk(data, "", ""), places
