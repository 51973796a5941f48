"""A progress line on stderr for the fleet's long steps, only when stderr is a terminal."""

from __future__ import annotations

import sys
import time


class ProgressBar:
    """`collecting: [#####.....] 12/128 nodes, 1 failed` on stderr, only when it is a terminal."""

    def __init__(self, label: str, total: int, enabled: bool | None = None) -> None:
        self.label, self.total = label, total
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.start = time.monotonic()
        self.done = self.failed = 0

    def update(self, done: int, failed: int = 0) -> None:
        self.done, self.failed = done, failed
        if not self.enabled:
            return
        finished = done + failed
        filled = int(20 * finished / self.total) if self.total else 20
        fails = f", {failed} failed" if failed else ""
        sys.stderr.write(f"\r\033[K{self.label}: [{'#' * filled}{'.' * (20 - filled)}] {finished}/{self.total} nodes"
                         f"{fails} ({time.monotonic() - self.start:.0f}s)")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
