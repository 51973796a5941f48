"""Where evidence came from: FILE:LINE references, compressed into ranges and bounded in size."""

from __future__ import annotations

MAX_RANGES = 12


class Where:
    """The lines a fact rests on, as 'FILE:A-B' ranges (the first MAX_RANGES, then a count)."""

    def __init__(self) -> None:
        self.ranges: list[list] = []  # [file, first, last]
        self.more = 0
        self.keys: dict[str, str] = {}  # what -> the first line that said it

    def add(self, where: str) -> None:
        name, _, line = where.rpartition(":")
        try:
            number = int(line)
        except ValueError:
            return
        if self.ranges:
            last = self.ranges[-1]
            if last[0] == name and last[1] <= number <= last[2] + 1:
                last[2] = max(last[2], number)
                return
        if len(self.ranges) < MAX_RANGES:
            self.ranges.append([name, number, number])
        else:
            self.more += 1

    def add_range(self, name: str, first: int, last: int) -> None:
        self.add(f"{name}:{first}")
        if self.ranges and self.ranges[-1][0] == name and self.ranges[-1][1] <= last:
            self.ranges[-1][2] = max(self.ranges[-1][2], last)

    def key(self, what: str, where: str) -> None:
        self.keys.setdefault(what, where)

    def merge(self, other: Where) -> None:
        for name, first, last in other.ranges:
            self.add_range(name, first, last)
        self.more += other.more
        for k, v in other.keys.items():
            self.keys.setdefault(k, v)

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def text(self) -> str:
        """'a.txt:3-6,14-16, b.txt:2': per file (in the order first seen), sorted, merged."""
        by_file: dict[str, list[list[int]]] = {}
        for name, first, last in self.ranges:
            by_file.setdefault(name, []).append([first, last])
        parts = []
        for name, spans in by_file.items():
            merged: list[list[int]] = []
            for first, last in sorted(spans):
                if merged and first <= merged[-1][1] + 1:
                    merged[-1][1] = max(merged[-1][1], last)
                else:
                    merged.append([first, last])
            parts.append(name + ":" + ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in merged))
        text = ", ".join(parts)
        if self.more:
            text += f" (+{self.more} more)"
        return text


class Examples:
    """At most `limit` (where, text) pairs, plus how many were seen in all."""

    def __init__(self, limit: int = 5) -> None:
        self.limit = limit
        self.items: list[dict] = []
        self.count = 0

    def add(self, where: str, text: str) -> None:
        self.count += 1
        if len(self.items) < self.limit:
            # a pasted line is shown back in reports and tickets: secrets in it are redacted first
            from allreduce_doctor.redact import redact_argv, redact_text

            self.items.append({"line": where, "text": redact_text(" ".join(redact_argv(text.split())))[:200]})

    def to_dict(self) -> dict:
        return {"count": self.count, "examples": list(self.items)}
