"""`lspci -tv` / `lspci -tvv` (pciutils): the PCI tree, one device per line, each with the bus it
sits on and whether that bus is a root bus or a bridge's secondary bus.

The drawing is pciutils ls-tree.c's: a root bus prints `[DDDD:BB]-`, a bridge `DD.F-[BB]-` or
`DD.F-[BB-SS]-` followed by one more `-`; a bus's children start at one column, each behind `--`
(an only child), `+-` or `\\-` (the last), and the next lines keep a `|` in the columns of the
markers still open (print_it). A device is read at the column of its marker, so its bus is the one
that opened that column; nothing is read from indentation alone.
"""

from __future__ import annotations

import re

from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, lines, require

_TOKEN_RE = re.compile(r"\[(?:([0-9a-fA-F]{4}):)?([0-9a-fA-F]{2})(?:-[0-9a-fA-F]{2})?\]-|([0-9a-fA-F]{2})\.([0-7])",
                       re.ASCII)
_NAME_RE = re.compile(r"\s{2}(\S.*?)\s*$")


@parser("lspci_tree")
def parse_lspci_tree(text: str) -> list[dict]:
    """[{domain, bus, root (a root bus), slot ('01.0'), device, function, name (None without -v),
    bridge (its secondary bus, or None)}] in print order."""
    require(text, "lspci -tv output (a tree starting at `-[DDDD:BB]-`)")
    devices: list[dict] = []
    open_buses: dict[int, tuple[str, str, bool]] = {}  # marker column -> (domain, bus, root)
    for line in lines(text):
        last: dict | None = None
        for m in _TOKEN_RE.finditer(line):
            if m.group(2) is not None:  # a bus: a root bus, or the secondary bus of the device before it
                start = m.end() if m.group(1) else m.end() + 1  # a bridge prints one more '-' (show_tree_bridge)
                if m.group(1):
                    domain, root = m.group(1).lower(), True
                elif last is not None:
                    domain, root = last["domain"], False
                    last["bridge"] = m.group(2).lower()
                else:
                    continue
                for col in [c for c in open_buses if c >= start]:
                    del open_buses[col]  # a new subtree: the deeper columns were another bus's
                open_buses[start] = (domain, m.group(2).lower(), root)
                continue
            marker = m.start() - 2
            if marker < 0 or line[marker:m.start()] not in ("+-", "\\-", "--") or marker not in open_buses:
                last = None
                continue
            domain, bus, root = open_buses[marker]
            name = _NAME_RE.match(line, m.end())
            last = {"domain": domain, "bus": bus, "root": root, "slot": m.group(0).lower(),
                    "device": int(m.group(3), 16), "function": int(m.group(4)),
                    "name": name.group(1) if name else None, "bridge": None}
            devices.append(last)
            if name:
                break  # the rest of the line is the device's name
    if not devices:
        raise fail("lspci -tv output (a device under a `[DDDD:BB]` root)", text[:80])
    return devices
