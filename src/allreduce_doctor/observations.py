"""Observation: a value plus its status and where it came from.

Status is one of:
  ok              the value was read and parsed
  not_applicable  the hardware or tool is not there (no RDMA devices, no GPU)
  missing         not captured: no permission, tool absent, not in the bundle
  error           non-zero exit, timeout, parse failure
Missing evidence never counts as healthy: the walk treats anything but `ok` as unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from allreduce_doctor.plaindata import as_plain

OK = "ok"
NOT_APPLICABLE = "not_applicable"
MISSING = "missing"
ERROR = "error"
STATUSES = (OK, NOT_APPLICABLE, MISSING, ERROR)


@dataclass
class Observation:
    fact: str
    value: Any = None
    status: str = OK
    source: str = ""  # sysfs path(s), argv, builtin name or evidence file
    reason: str = ""  # why it is not ok, in words
    probe: str = ""  # the probe id that produced it
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == OK

    def to_dict(self) -> dict:
        return as_plain(self)

    @classmethod
    def from_dict(cls, data: dict) -> Observation:
        fields: dict[str, Any] = {k: data.get(k) for k in cls.__dataclass_fields__ if k in data}
        return cls(**fields)


@dataclass
class Observations:
    """The facts of one node, by name."""

    facts: dict[str, Observation] = field(default_factory=dict)

    def add(self, obs: Observation) -> None:
        self.facts[obs.fact] = obs

    def get(self, fact: str) -> Observation:
        return self.facts.get(
            fact, Observation(fact, None, MISSING, reason="not observed", probe="")
        )

    def __contains__(self, fact: str) -> bool:
        return fact in self.facts

    def rows(self, fact: str) -> list[dict]:
        """The records of a fan-out fact that was read ([] when it was not)."""
        found = self.get(fact)
        return [r for r in found.value if isinstance(r, dict)] if found.ok and isinstance(found.value, list) else []

    def values(self):
        return self.facts.values()

    def to_dict(self) -> dict:
        return {name: obs.to_dict() for name, obs in sorted(self.facts.items())}
