"""One output budget for a whole collection on a live host (issue 15).

Each command's output is capped (hosts/live.py MAX_OUTPUT_BYTES) and each file read too
(records.MAX_FILE_BYTES), but a run holds many of them: every byte a command prints or a read
returns is drawn from one total, so no set of misbehaving tools can take the node's memory.
Probes run concurrently, so a call reserves its own cap up front and gives back what it did
not use: the bytes read in all never pass the total, whatever the order.
"""

from __future__ import annotations

import threading

MAX_COLLECTION_BYTES = 256 << 20
OVER_BUDGET = "collection over budget"
# What one node's bundle may hold, inflated, in a fleet (the fleet run's workers and the TUI's
# fleet screen): each holds one bundle at a time, so --jobs N holds at most N of these. A node
# collects up to MAX_COLLECTION_BYTES of output but a real node's bundle is a few MiB; a bigger
# one is refused there and read alone by `diagnose --snapshot`.
FLEET_BUNDLE_BYTES = 64 << 20
OVER_FLEET_HINT = " in a fleet; diagnose it alone with `diagnose --snapshot`"


class OutputBudget:
    def __init__(self, total: int = MAX_COLLECTION_BYTES) -> None:
        self.total = total
        self._left = total
        self._lock = threading.Lock()

    def reserve(self, want: int) -> int:
        """Up to `want` bytes for one call (0 once the budget is spent)."""
        with self._lock:
            granted = max(min(want, self._left), 0)
            self._left -= granted
            return granted

    def settle(self, granted: int, used: int) -> None:
        """The call read `used` of its `granted` bytes: the rest goes back."""
        with self._lock:
            self._left += granted - min(max(used, 0), granted)

    @property
    def spent(self) -> int:
        with self._lock:
            return self.total - self._left

    def reason(self, what: str) -> str:
        """The error of a call the budget stopped: `what` says what happened to it."""
        size = f"{self.total >> 20} MiB" if self.total % (1 << 20) == 0 else f"{self.total} bytes"
        return f"{OVER_BUDGET} ({size} of output in all; {what})"
