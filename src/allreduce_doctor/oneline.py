"""One-line renderings of deciding values, shared by the reports, the ticket exporters and the TUI."""

from __future__ import annotations

import json

MAX_VALUE = 160


# Item attributes that identify rather than decide; left out of compact renderings.
IDENTITY_KEYS = {"device", "port", "fw_ver", "hca_type", "pci_bdf", "netdev", "link_layer", "value"}


def _names(key: str, items: list) -> str:
    names = [str(i.get("name", "?")) for i in items]
    listed = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return f"{key}{': ' if key else ''}{len(names)} checked ({listed})"


def _records(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(i, dict) for i in value)


def _compact(value, collection: bool = False):
    """Witness records become 'name: key=value ...'; whole collections become their names."""
    if isinstance(value, dict) and len(value) == 1:
        (key, inner), = value.items()
        if _records(inner):
            return _names(key, inner)
    if collection and _records(value):
        return _names("", value)
    if isinstance(value, list) and value and all(isinstance(i, dict) for i in value):
        parts = []
        for item in value[:4]:
            fields = " ".join(f"{k}={json.dumps(v, default=str)}" for k, v in item.items()
                              if k not in IDENTITY_KEYS and k != "name" and not k.startswith("_")
                              and not isinstance(v, (dict, list)))
            parts.append(f"{item.get('name', '?')}: {fields}")
        more = f" (+{len(value) - 4} more)" if len(value) > 4 else ""
        return "; ".join(parts) + more
    return value


def short(value, limit: int = MAX_VALUE, collection: bool = False) -> str:
    """A one-line rendering of a deciding value (collection: the value is a whole fact)."""
    if value is None:
        return "-"
    value = _compact(value, collection)
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
