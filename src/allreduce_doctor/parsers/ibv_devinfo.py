"""`ibv_devinfo [-v|-vv]` (rdma-core libibverbs/examples/devinfo.c).

Blocks start at `hca_id:`; a `port:` line opens a port. Values such as `4096 (5)` carry
the enum in parentheses; we keep the human number. GID lines only appear with -v.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, kv, lead_int, lead_num, lines, require, to_int
from allreduce_doctor.parsers.sysfs import gid_info

_HCA_RE = re.compile(r"^\s*hca_id\s*:\s*(\S+)\s*$")
_PORT_RE = re.compile(r"^\s*port\s*:\s*([0-9]+)\s*$", re.ASCII)
# `GID[  3]:  ::ffff:27.105.179.3, RoCE v2` (the type suffix is missing on older rdma-core)
_GID_RE = re.compile(r"^\s*GID\[\s*([0-9]{1,9})\s*\]\s*:\s*([0-9A-Fa-f:.]+)\s*(?:,\s*(.*?))?\s*$", re.ASCII)
_PAREN_RE = re.compile(r"\s*\([^)]*\)\s*$")


def _word(raw: str) -> str:
    """'PORT_ACTIVE (4)' -> 'PORT_ACTIVE'; 'InfiniBand (0)' -> 'InfiniBand'."""
    return _PAREN_RE.sub("", raw).strip()


_DEVICE_FIELDS: dict[str, Callable[[str], Any]] = {
    "transport": _word,
    "fw_ver": str,
    "node_guid": str,
    "sys_image_guid": str,
    "vendor_id": str,
    "vendor_part_id": to_int,
    "hw_ver": str,
    "board_id": str,
    "phys_port_cnt": to_int,
}
_PORT_FIELDS: dict[str, Callable[[str], Any]] = {
    "state": _word,
    "max_mtu": lead_int,
    "active_mtu": lead_int,
    "sm_lid": to_int,
    "port_lid": to_int,
    "link_layer": str,
    "active_width": lead_int,  # '4X (2)' -> 4 lanes
    "active_speed": lead_num,  # '25.0 Gbps (32)' -> per-lane Gb/s
    "phys_state": _word,
    "gid_tbl_len": to_int,
}


def _gid(m: re.Match) -> dict:
    try:
        gid = gid_info(m.group(2))["gid"]
    except ParseError:
        gid = m.group(2)
    kind = m.group(3) or None
    return {"index": int(m.group(1)), "gid": gid, "type": kind}


def _finish(port: dict) -> None:
    """Rename the speed key and add the port's total rate (lanes x per-lane speed)."""
    speed = port.pop("active_speed", None)
    port["active_speed_gbps"] = speed
    width = port.get("active_width")
    port["rate_gbps"] = speed * width if speed is not None and width is not None else None


@parser("ibv_devinfo")
def parse_ibv_devinfo(text: str) -> dict:
    what = "ibv_devinfo output (hca_id: blocks)"
    require(text, what)
    devices: dict[str, dict] = {}
    device: dict | None = None
    port: dict | None = None
    for line in lines(text):
        m = _HCA_RE.match(line)
        if m:
            device = {"ports": {}}
            devices[m.group(1)] = device
            port = None
            continue
        if device is None:
            continue
        m = _PORT_RE.match(line)
        if m:
            port = {"gids": []}
            device["ports"][m.group(1)] = port
            continue
        m = _GID_RE.match(line)
        if m and port is not None:
            port["gids"].append(_gid(m))
            continue
        pair = kv(line)
        if pair is None:
            continue
        fields = _PORT_FIELDS if port is not None else _DEVICE_FIELDS
        convert = fields.get(pair[0])
        if convert is not None:
            (port if port is not None else device)[pair[0]] = convert(pair[1])
    if not devices:
        if "no ib devices found" in text.lower():
            return {"devices": {}}
        raise fail(what, text)
    for dev in devices.values():
        for p in dev["ports"].values():
            _finish(p)
    return {"devices": devices}
