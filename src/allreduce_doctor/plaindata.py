"""dataclasses.asdict without its deep copy of every leaf.

asdict() calls copy.deepcopy on each scalar it meets: a Diagnosis holds some 15,000 of them, which made
the conversion a tenth of a whole `diagnose --snapshot` run. The values it meets here are already plain
(str, numbers, None, bool, or containers of them), so they are returned as they are; anything else is
still deep-copied, as asdict does.
"""

from __future__ import annotations

import copy
from dataclasses import fields

_SCALARS = (str, int, float, bool, type(None))
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def as_plain(obj):
    """What dataclasses.asdict(obj) returns, for dataclasses, lists, tuples and dicts of plain values."""
    if isinstance(obj, _SCALARS):
        return obj
    cls = type(obj)
    names = _FIELD_NAMES.get(cls)
    if names is None and hasattr(cls, "__dataclass_fields__"):
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    if names is not None:
        return {name: as_plain(getattr(obj, name)) for name in names}
    if cls is list:
        return [as_plain(v) for v in obj]
    if cls is dict:
        return {as_plain(k): as_plain(v) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a namedtuple: asdict rebuilds it by position
        return cls(*[as_plain(v) for v in obj])
    if isinstance(obj, (list, tuple)):
        return cls(as_plain(v) for v in obj)
    if isinstance(obj, dict):
        return cls((as_plain(k), as_plain(v)) for k, v in obj.items())
    return copy.deepcopy(obj)
