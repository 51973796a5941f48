"""`show_gids` (Mellanox mlnx-tools): one row per populated GID table entry.

Columns DEV PORT INDEX GID IPv4 VER DEV; the IPv4 cell is empty for non-IPv4 GIDs and the
netdev cell is empty on IB ports, so rows are read as tokens, not columns.
"""

from __future__ import annotations

import re

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, lines, require
from allreduce_doctor.parsers.sysfs import gid_info

_ROW_RE = re.compile(
    r"^\s*(?P<dev>\S+)\s+(?P<port>[0-9]{1,9})\s+(?P<index>[0-9]{1,9})\s+(?P<gid>[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*)"
    r"(?:\s+(?P<ipv4>[0-9]{1,3}(?:\.[0-9]{1,3}){3}))?"
    r"(?:\s+v(?P<ver>[12]))?"
    r"(?:\s+(?P<ndev>\S+))?\s*$",
    re.ASCII,
)
_HEADER_RE = re.compile(r"^\s*DEV\s+PORT\s+INDEX\s+GID\b")
_TRAILER_RE = re.compile(r"^\s*n_gids_found\s*=\s*([0-9]+)\s*$", re.ASCII)


def _row(m: re.Match) -> dict:
    try:
        gid = gid_info(m.group("gid"))["gid"]
    except ParseError:
        gid = m.group("gid")
    ver = m.group("ver")
    return {
        "dev": m.group("dev"),
        "port": int(m.group("port")),
        "index": int(m.group("index")),
        "gid": gid,
        "ipv4": m.group("ipv4"),
        "version": int(ver) if ver else None,
        "ndev": m.group("ndev"),
    }


@parser("show_gids")
def parse_show_gids(text: str) -> list[dict]:
    """Rows in order; a header with `n_gids_found=0` (e.g. inside a container) gives []."""
    what = "show_gids output (DEV PORT INDEX GID ... table)"
    require(text, what)
    rows: list[dict] = []
    seen_table = False
    for line in lines(text):
        if _HEADER_RE.match(line) or _TRAILER_RE.match(line):
            seen_table = True
            continue
        m = _ROW_RE.match(line)
        if m:
            rows.append(_row(m))
    if not rows and not seen_table:
        raise fail(what, text)
    return rows
