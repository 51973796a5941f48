"""Three-valued (Kleene) logic: True, False and UNKNOWN.

UNKNOWN is what a condition yields when the evidence it needs is missing: a fact whose
observation is not ok, a null where a value was expected. Missing evidence is never healthy.
"""

from __future__ import annotations

from typing import Any


class _Unknown:
    """The third truth value. A singleton; it refuses to be used as a Python bool."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:  # a bug guard: UNKNOWN must go through kleene_*()
        raise TypeError("UNKNOWN has no Python truth value")

    def __reduce__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()


def is_unknown(value: Any) -> bool:
    return value is UNKNOWN


def kleene_not(a: Any) -> Any:
    return UNKNOWN if a is UNKNOWN else not a


def kleene_and(a: Any, b: Any) -> Any:
    if a is False or b is False:
        return False
    if a is UNKNOWN or b is UNKNOWN:
        return UNKNOWN
    return True


def kleene_or(a: Any, b: Any) -> Any:
    if a is True or b is True:
        return True
    if a is UNKNOWN or b is UNKNOWN:
        return UNKNOWN
    return False
