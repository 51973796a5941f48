"""`ethtool IFACE`: the link modes this port supports and advertises, the ones its link partner
advertises, and the speed it runs at.

ethtool.c dump_link_usettings() prints "Supported link modes:", "Advertised link modes:" and
"Link partner advertised link modes:" (dump_link_caps: the names of link_modes[], e.g.
"400000baseCR4/Full", several a line, continuation lines indented; "Not reported" when the mask
is empty) and "Speed: 400000Mb/s" ("Unknown!" without a link). The partner's modes are printed
only when the driver reports them (mlx5e_ethtool_get_link_ksettings fills lp_advertising from
the PTYS register's eth_proto_lp_advertise, filled by auto-negotiation).
"""

from __future__ import annotations

import re

from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, lines, require

_MODE = re.compile(r"\b([0-9]{2,7})base[A-Za-z0-9_]+/(?:Full|Half)\b", re.ASCII)
_HEADS = (("link partner advertised link modes", "partner"), ("supported link modes", "supported"),
          ("advertised link modes", "advertised"))
_SPEED = re.compile(r"^\s*Speed:\s*(?:([0-9]{1,9})\s*Mb/s|(\S.*))$", re.ASCII)


@parser("ethtool_modes")
def parse_ethtool_modes(text: str) -> dict:
    """{'supported': [Mb/s, ...], 'advertised': [...], 'partner': [...] or None (not printed),
    'speed_mbps': int or None, 'modes': {list: [names]}}: the speeds are each list's modes'
    rates, highest first."""
    what = "ethtool output (Supported link modes: / Speed:)"
    require(text, what)
    modes: dict[str, list[str] | None] = {"supported": None, "advertised": None, "partner": None}
    current, speed, found = None, None, False
    for line in lines(text):
        head, _, rest = line.strip().partition(":")
        key = next((k for h, k in _HEADS if head.strip().lower() == h), None)
        if key is not None:
            current, found = key, True
            modes[key] = [m.group(0) for m in _MODE.finditer(rest)]
            continue
        if current and ":" not in line and _MODE.search(line):
            modes[current] = (modes[current] or []) + [m.group(0) for m in _MODE.finditer(line)]
            continue
        current = None
        m = _SPEED.match(line)
        if m:
            speed, found = (int(m.group(1)) if m.group(1) else None), True
    if not found:
        raise fail(what, text)
    out: dict = {"speed_mbps": speed, "modes": {k: v for k, v in modes.items() if v is not None}}
    for key, names in modes.items():
        out[key] = None if names is None else sorted({int(n.split("base", 1)[0]) for n in names}, reverse=True)
    return out
