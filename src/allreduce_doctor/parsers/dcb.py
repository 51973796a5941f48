"""iproute2 `dcb -j pfc show dev IF` and `dcb -j app show dev IF` (JSON output).

Shapes follow iproute2 dcb/dcb_pfc.c and dcb/dcb_app.c: `prio_pfc` is an array of 8 booleans
indexed by priority, `requests`/`indications` arrays of 8 counters (with -s), and
`dscp_prio` an array of [dscp, prio] pairs. Older or hand-made variants (on/off strings,
{"3": true} objects, DSCP names like "CS3") are accepted too.
"""

from __future__ import annotations

import json

from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, require, to_int

# DSCP names as iproute2's rt_dsfield / RFC 4594 spell them.
_DSCP_NAMES = {f"CS{n}": n * 8 for n in range(8)}
_DSCP_NAMES.update({f"AF{x}{y}": 8 * x + 2 * y for x in range(1, 5) for y in range(1, 4)})
_DSCP_NAMES.update({"EF": 46, "VA": 44, "LE": 1, "BE": 0, "DEFAULT": 0})


def _load(text: str, what: str) -> dict:
    require(text, what)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise fail(what, text) from None
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    if not isinstance(data, dict):
        raise fail(what, text)
    return data


def _flag(value) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, str) and value.lower() in ("on", "off", "true", "false", "1", "0"):
        return value.lower() in ("on", "true", "1")
    return None


def _by_prio(value) -> dict[str, object]:
    """[v0..v7] or {"0": v0, ...} or ["0:on", ...] -> {"0": v0, ...}."""
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    if not isinstance(value, list):
        return {}
    out: dict[str, object] = {}
    for i, item in enumerate(value):
        if isinstance(item, str) and ":" in item:
            key, _, item = item.partition(":")
            out[key.strip()] = item.strip()
        else:
            out[str(i)] = item
    return out


def _counters(value) -> dict[str, int] | None:
    if value is None:
        return None
    return {k: v for k, v in _by_prio(value).items() if isinstance(v, int) and not isinstance(v, bool)}


_TEXT_KEYS = ("pfc-cap", "macsec-bw", "delay", "prio-pfc", "requests", "indications")


def _text(text: str) -> dict:
    """`dcb pfc show dev IF` without -j (dcb/dcb_pfc.c dcb_pfc_print; man dcb-pfc(8) EXAMPLES:
    "prio-pfc 0:off 1:on ..."): KEY VALUE or KEY P:V ... runs -> the JSON shape."""
    data: dict = {}
    key = None
    for token in text.split():
        if token in _TEXT_KEYS:
            key = token.replace("-", "_")
            continue
        if key is None:
            continue
        if ":" in token:
            prio, _, value = token.partition(":")
            number = to_int(value)
            data.setdefault(key, []).append(f"{prio}:{value}" if number is None else None)
            if number is not None:
                data[key][-1] = f"{prio}:{number}"
                data.setdefault(key + "#", {})[prio] = number
        else:
            number = to_int(token)
            data[key] = number if number is not None else token
    for key in ("requests", "indications"):  # P:N counters as {"P": N}
        if key + "#" in data:
            data[key] = data.pop(key + "#")
    data.pop("prio_pfc#", None)
    return data


@parser("dcb_pfc")
def parse_dcb_pfc(text: str) -> dict:
    what = "JSON from `dcb -j pfc show dev IF` with a prio_pfc array"
    data = _text(text) if text.lstrip()[:1] not in ("{", "[") else _load(text, what)
    prio_pfc = data.get("prio_pfc", data.get("prio-pfc"))
    if prio_pfc is None:
        raise fail(what, text)
    enabled = []
    for key, value in _by_prio(prio_pfc).items():
        prio = to_int(key)
        if prio is not None and _flag(value):
            enabled.append(prio)
    cap = data.get("pfc_cap")
    delay = data.get("delay")
    return {
        "pfc_enabled": sorted(set(enabled)),
        "pfc_cap": cap if isinstance(cap, int) and not isinstance(cap, bool) else None,
        "delay": delay if isinstance(delay, int) and not isinstance(delay, bool) else None,
        "requests": _counters(data.get("requests")),
        "indications": _counters(data.get("indications")),
    }


def _dscp(key) -> int | None:
    if isinstance(key, bool):
        return None
    if isinstance(key, int):
        return key
    if isinstance(key, str):
        number = to_int(key)
        return number if number is not None else _DSCP_NAMES.get(key.strip().upper())
    return None


def _prio(value) -> int | None:
    """A priority 0..7 given as a number or a numeric string."""
    if isinstance(value, str):
        value = to_int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 7:
        return value
    return None


def _pairs(value) -> list[tuple[object, object]]:
    """[[26, 3], ...] (iproute2) or ["26:3", ...] or {"26": 3}."""
    if isinstance(value, dict):
        return list(value.items())
    pairs = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, list) and len(item) == 2:
            pairs.append((item[0], item[1]))
        elif isinstance(item, str) and ":" in item:
            key, _, prio = item.partition(":")
            pairs.append((key, prio))
    return pairs


@parser("dcb_app")
def parse_dcb_app(text: str) -> dict:
    """trust is 'dscp' when the APP table has DSCP entries, else None (PCP / not set)."""
    data = _load(text, "JSON from `dcb -j app show dev IF`")
    dscp2prio: dict[str, int] = {}
    for key, prio in _pairs(data.get("dscp_prio", data.get("dscp-prio"))):
        dscp = _dscp(key)
        prio = _prio(prio)
        if dscp is not None and prio is not None:
            dscp2prio[str(dscp)] = prio
    return {"dscp2prio": dscp2prio, "trust": "dscp" if dscp2prio else None}
