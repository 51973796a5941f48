"""A plain progress line on stderr for headless runs (only when stderr is a terminal)."""

from __future__ import annotations

import sys
import time


def stderr_progress():
    if not sys.stderr.isatty():
        return None
    state = {"done": 0}

    def progress(event: str, probe_id: str, detail: str) -> None:
        if event == "done":
            state["done"] += 1
            sys.stderr.write(f"\r\033[Kprobing: {state['done']} probes done ({probe_id})")
        elif event == "wait":
            seconds = float(detail or 0)
            end = time.monotonic() + seconds
            while (left := end - time.monotonic()) > 0:
                filled = int(20 * (1 - left / seconds)) if seconds else 20
                sys.stderr.write(f"\r\033[Ksampling counters [{'#' * filled}{'.' * (20 - filled)}] {left:4.1f}s")
                sys.stderr.flush()
                time.sleep(min(0.1, left))
        elif event == "sample":
            sys.stderr.write("\r\033[K")
        sys.stderr.flush()

    return progress
