"""Single sysfs/configfs files and small config files: one value per file.

Formats follow the kernel's drivers/infiniband/core/sysfs.c and Documentation/ABI
(see docs/sysfs-layout.md); older kernels and web copies vary in spacing.
"""

from __future__ import annotations

import ipaddress
import re

from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import NUM, fail, lead_num, require, to_int

# Port state and physical state codes as the kernel prints them ("4: ACTIVE").
IB_STATES = {0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
IB_PHYS_STATES = {
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "Phy Test",
}

_CODED_RE = re.compile(r"([0-9]{1,9})\s*:\s*(\S.*)", re.ASCII)  # "4: ACTIVE"
_CODE_SUFFIX_RE = re.compile(r"\(([0-9]{1,9})\)$", re.ASCII)  # "PORT_ACTIVE (4)" (ibv_devinfo)
_RATE_RE = re.compile(
    rf"({NUM})\s*Gb/sec(?:\s*\(\s*([0-9]{{1,9}})X\s*([A-Za-z0-9]*)\s*\))?", re.ASCII
)
_GT_RE = re.compile(rf"({NUM})\s*GT/s", re.ASCII)
_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*", re.ASCII)


def _squash(name: str) -> str:
    """Compare state names loosely: 'PORT_ACTIVE', 'Active', 'LINK_UP', 'LinkUp'."""
    name = name.upper()
    if name.startswith("PORT_"):
        name = name[5:]
    return re.sub(r"[^A-Z0-9]", "", name)


def _coded(text: str, table: dict[int, str], what: str) -> dict:
    """'N: Name', 'NAME (N)' or a bare known name -> {"code", "name"}."""
    value = require(text, what).strip()
    m = _CODED_RE.fullmatch(value)
    if m:
        return {"code": int(m.group(1)), "name": m.group(2).strip()}
    m = _CODE_SUFFIX_RE.search(value)
    name = value[: m.start()].strip() if m else value
    for code, known in table.items():
        if _squash(known) == _squash(name):
            return {"code": code, "name": known}
    if m and name:  # unknown name but the code is there
        return {"code": int(m.group(1)), "name": name}
    raise fail(what, value)


@parser("text")
def parse_text(text: str) -> str:
    return text.strip()


@parser("int")
def parse_int(text: str) -> int:
    value = to_int(require(text, "an integer"))
    if value is None:
        raise fail("an integer", text)
    return value


@parser("ib_state")
def parse_ib_state(text: str) -> dict:
    return _coded(text, IB_STATES, "an IB port state like '4: ACTIVE'")


@parser("ib_phys_state")
def parse_ib_phys_state(text: str) -> dict:
    return _coded(text, IB_PHYS_STATES, "an IB physical state like '5: LinkUp'")


@parser("ib_rate")
def parse_ib_rate(text: str) -> dict:
    """'400 Gb/sec (4X NDR)'; also a bare ibstat-style number ('400')."""
    what = "an IB rate like '400 Gb/sec (4X NDR)'"
    value = require(text, what).strip()
    m = _RATE_RE.fullmatch(value)
    if m:
        width = int(m.group(2)) if m.group(2) else None
        return {"gbps": float(m.group(1)), "width": width, "speed": m.group(3) or None}
    number = lead_num(value)
    if number is not None and re.fullmatch(NUM, value, re.ASCII):
        return {"gbps": number, "width": None, "speed": None}
    raise fail(what, value)


@parser("pci_speed")
def parse_pci_speed(text: str) -> float:
    """'32.0 GT/s PCIe' (kernel > 5.6) or '32 GT/s' (older) -> 32.0."""
    value = require(text, "a PCIe link speed like '32.0 GT/s PCIe'").strip()
    m = _GT_RE.match(value)
    if not m:
        raise fail("a PCIe link speed like '32.0 GT/s PCIe'", value)
    return float(m.group(1))


# Built once: a RoCE node reads hundreds of GIDs, and parsing the network each time was most of it.
_GID_CHARS = re.compile(r"[0-9A-Fa-f:.]+", re.ASCII)
_LINK_LOCAL = ipaddress.IPv6Network("fe80::/10")


# The kernel prints a GID with %pI6 (drivers/infiniband/core/sysfs.c show_port_gid): eight groups of
# four lowercase hex digits (Documentation/core-api/printk-formats.rst). That spelling is read
# without ipaddress, which cost more than all of a node's other sysfs files together.
_KERNEL_GID = re.compile(r"[0-9a-f]{4}(?::[0-9a-f]{4}){7}", re.ASCII)
_IPV4_MAPPED = "0000:0000:0000:0000:0000:ffff:"  # ::ffff:0:0/96


def _kernel_gid(value: str) -> dict:
    """gid_info() of a GID in the kernel's own spelling (the same dict ipaddress would give)."""
    ipv4 = None
    if value == "0000:0000:0000:0000:0000:0000:0000:0000":
        kind = "empty"
    elif value.startswith(_IPV4_MAPPED):
        kind, high, low = "ipv4", int(value[30:34], 16), int(value[35:39], 16)
        ipv4 = f"{high >> 8}.{high & 255}.{low >> 8}.{low & 255}"
    elif int(value[:4], 16) & 0xFFC0 == 0xFE80:  # fe80::/10
        kind = "link_local"
    else:
        kind = "global"
    return {"gid": value, "kind": kind, "ipv4": ipv4}


def gid_info(value: str) -> dict:
    """A GID in any IPv6 spelling -> {"gid": 8 full groups, "kind", "ipv4"}."""
    what = "a GID like 'fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8'"
    value = require(value, what).strip()
    if _KERNEL_GID.fullmatch(value):
        return _kernel_gid(value)
    if not _GID_CHARS.fullmatch(value):
        raise fail(what, value)
    # Other spellings ("fe80::e42:a1ff:fe5d:4d00", "::ffff:10.0.1.17": ibv_devinfo's inet_ntop):
    # expanded by the C library's inet_pton; what it refuses, ipaddress judges.
    import socket

    try:
        raw = socket.inet_pton(socket.AF_INET6, value).hex()
    except (OSError, ValueError):
        pass
    else:
        return _kernel_gid(":".join(raw[i:i + 4] for i in range(0, 32, 4)))
    try:
        addr = ipaddress.IPv6Address(value)
    except ValueError:
        raise fail(what, value) from None
    ipv4 = None
    if int(addr) == 0:
        kind = "empty"
    elif addr.ipv4_mapped is not None:
        kind, ipv4 = "ipv4", str(addr.ipv4_mapped)
    elif addr in _LINK_LOCAL:
        kind = "link_local"
    else:  # IB subnet-prefix GIDs, routable IPv6
        kind = "global"
    return {"gid": addr.exploded, "kind": kind, "ipv4": ipv4}


@parser("gid")
def parse_gid(text: str) -> dict:
    return gid_info(text)


@parser("gid_type")
def parse_gid_type(text: str) -> dict:
    """'RoCE v2' / 'IB/RoCE v1' (gid_attrs/types, configfs default_roce_mode)."""
    value = require(text, "a GID type like 'RoCE v2'").strip()
    m = re.fullmatch(r"(?:(?:IB/)?RoCE\s*)?v\s*([12])", value, re.ASCII | re.IGNORECASE)
    if not m:
        raise fail("a GID type like 'RoCE v2' or 'IB/RoCE v1'", value)
    return {"type": value, "version": int(m.group(1))}


@parser("key_value")
def parse_key_value(text: str) -> dict:
    """nccl.conf / env-file style `KEY=VALUE` lines; blank lines and # comments skipped."""
    result: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].strip()
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not _KEY_RE.fullmatch(key):
            raise fail(f"KEY=VALUE on line {number}", raw)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        result[key] = value
    return result


@parser("netdev_speed")
def parse_netdev_speed(text: str) -> int | None:
    """/sys/class/net/IF/speed in Mb/s; '-1' or 'Unknown' (no link, virtual NIC) -> None."""
    value = require(text, "a link speed in Mb/s like '400000'").strip()
    if value.lower().rstrip("!") == "unknown":
        return None
    number = to_int(value)
    if number is None:
        raise fail("a link speed in Mb/s like '400000'", value)
    return number if number >= 0 else None
