"""The one range check of every number a user gives on the command line, and its one message form.

Every command states a number's range the same way ("--flag V: expected LOW to HIGH unit"), so
two bad values of one flag (0 and -1, say) are refused with the same range, never two. NaN and
infinity are outside every range (argparse's float() takes both).
"""

from __future__ import annotations

import math

from allreduce_doctor.errors import DoctorError

MAX_INTERVAL = 600.0  # seconds between two counter samples, every command
MIN_LIVE_INTERVAL = 0.1  # on a live node two samples closer than this measure nothing


def check_range(value: float, low: float, high: float, flag: str, unit: str = "", *, above: bool = False,
                why: str = "") -> float:
    """`value` when low <= value <= high (low < value with `above`); else DoctorError naming the range."""
    inside = math.isfinite(value) and (low < value if above else low <= value) and value <= high
    if not inside:
        unit = f" {unit}" if unit else ""
        span = f"more than {low:g} and at most {high:g}{unit}" if above else f"{low:g} to {high:g}{unit}"
        raise DoctorError(f"{flag} {value:g}: expected {span}{why}")
    return value


def check_interval(seconds: float, live: bool = False, most: float = MAX_INTERVAL, why: str = "") -> float:
    """The one range of --interval for every command. On a live node two samples closer than
    MIN_LIVE_INTERVAL measure nothing; a bundle replays its recorded samples (0 is fine there)."""
    return check_range(seconds, MIN_LIVE_INTERVAL if live else 0, min(most, MAX_INTERVAL), "--interval", "seconds",
                       why=why)
