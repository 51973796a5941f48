"""`lspci -vvv` (pciutils): per device the NUMA node, driver, PCIe link capability and
status, the ACS control bits that decide whether GPU<->NIC P2P is redirected, whether ATS is
enabled (the `ATSCtl: Enable+` line of pciutils ls-ecaps.c cap_ats), and what the device is to
NCCL (`kind`: an RDMA-capable NIC, an NVIDIA GPU, or neither).

Non-root runs print `Capabilities: <access denied>`; then the link and ACS fields are
unknown (None), never "fine".
"""

from __future__ import annotations

import re

from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import NUM, fail, lines, require

_DEV_RE = re.compile(
    r"^((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(\S.*)$", re.ASCII
)
_NUMA_RE = re.compile(r"^\s*NUMA node\s*:\s*(-?[0-9]{1,6})\s*$", re.ASCII)
_DRIVER_RE = re.compile(r"^\s*Kernel driver in use\s*:\s*(\S+)")
_LNKCAP_RE = re.compile(rf"^\s*LnkCap\s*:.*?Speed\s+(?:({NUM})GT/s|\S+)\s*,\s*Width\s+x([0-9]{{1,9}})", re.ASCII)
_LNKSTA_RE = re.compile(
    rf"^\s*LnkSta\s*:\s*Speed\s+(?:({NUM})GT/s|\S+)\s*(?:\((\w+)\))?\s*,\s*Width\s+x([0-9]{{1,9}})\s*(?:\((\w+)\))?",
    re.ASCII,
)
_ACSCTL_RE = re.compile(r"^\s*ACSCtl\s*:\s*(.*)$")
_EXPRESS_RE = re.compile(r"^\s*Capabilities:\s*\[[0-9a-fA-F]+\]\s*Express\s*\(v\d\)\s+([A-Za-z][A-Za-z /-]*?)\s*(?:\(|,|$)")
_ATSCTL_RE = re.compile(r"^\s*ATSCtl\s*:\s*Enable([+-])")
_BUS_RE = re.compile(r"^\s*Bus:\s*primary=([0-9a-fA-F]{2}),\s*secondary=([0-9a-fA-F]{2}),\s*subordinate=([0-9a-fA-F]{2})")


# What a device is to NCCL, from lspci's class and vendor words: NICs of the RDMA vendors, NVIDIA GPUs.
_NIC_CLASSES = ("infiniband controller", "ethernet controller", "network controller")
_NIC_VENDORS = ("mellanox", "nvidia", "broadcom", "intel")
_GPU_CLASSES = ("3d controller", "vga compatible controller")


def device_kind(name: str) -> str | None:
    """'nic', 'gpu' or None from lspci's device line ('Ethernet controller: Mellanox ...')."""
    low = str(name or "").lower()
    if low.startswith(_NIC_CLASSES) and any(v in low for v in _NIC_VENDORS):
        return "nic"
    if low.startswith(_GPU_CLASSES) and "nvidia" in low:
        return "gpu"
    return None


def _speed(raw: str | None) -> float | None:
    return float(raw) if raw else None


def _new(bdf: str, name: str) -> dict:
    if bdf.count(":") == 1:  # lspci without -D omits the PCI domain
        bdf = "0000:" + bdf
    return {
        "bdf": bdf.lower(),
        "name": name.strip(),
        "kind": device_kind(name),
        "numa_node": None,
        "driver": None,
        "lnkcap": None,
        "lnksta": None,
        "acs_ctl": None,
        "acs_redirect": False,
        "access_denied": False,
        "ats_enabled": None,  # the ATS capability's Enable bit; False when the device has no ATS
        "port_type": None,  # PCIe capability's device type: Root Port, Downstream Port, Endpoint, ...
        "secondary_bus": None,  # a bridge's bus range: the devices below it
        "subordinate_bus": None,
    }


def _numa(dev: dict, m: re.Match) -> None:
    dev["numa_node"] = int(m.group(1))


def _driver(dev: dict, m: re.Match) -> None:
    dev["driver"] = m.group(1)


def _lnkcap(dev: dict, m: re.Match) -> None:
    dev["lnkcap"] = {"speed_gts": _speed(m.group(1)), "width": int(m.group(2))}


def _lnksta(dev: dict, m: re.Match) -> None:
    dev["lnksta"] = {"speed_gts": _speed(m.group(1)), "width": int(m.group(3)),
                     "speed_note": m.group(2), "width_note": m.group(4)}


def _acsctl(dev: dict, m: re.Match) -> None:
    flags = {t[:-1]: t[-1] == "+" for t in m.group(1).split() if len(t) > 1 and t[-1] in "+-"}
    dev["acs_ctl"] = flags
    dev["acs_redirect"] = bool(flags.get("ReqRedir") or flags.get("CmpltRedir"))


def _atsctl(dev: dict, m: re.Match) -> None:
    dev["ats_enabled"] = m.group(1) == "+"


def _express(dev: dict, m: re.Match) -> None:
    dev["port_type"] = m.group(1)


def _bus(dev: dict, m: re.Match) -> None:
    dev["secondary_bus"], dev["subordinate_bus"] = int(m.group(2), 16), int(m.group(3), 16)


# Each field pattern starts with its own word before the first colon (after blanks), so the word
# picks the one pattern a line can match: one dict lookup instead of eight regexes on each of
# lspci's ~1,600 lines. strip() removes what the patterns' \s* match and more (never a line lost).
_FIELDS = {"NUMA node": (_NUMA_RE, _numa), "Kernel driver in use": (_DRIVER_RE, _driver),
           "LnkCap": (_LNKCAP_RE, _lnkcap), "LnkSta": (_LNKSTA_RE, _lnksta), "ACSCtl": (_ACSCTL_RE, _acsctl),
           "ATSCtl": (_ATSCTL_RE, _atsctl), "Capabilities": (_EXPRESS_RE, _express), "Bus": (_BUS_RE, _bus)}


def _field(dev: dict, line: str) -> None:
    entry = _FIELDS.get(line.split(":", 1)[0].strip())
    if entry is not None and (m := entry[0].match(line)) is not None:
        entry[1](dev, m)
    elif "<access denied>" in line:
        dev["access_denied"] = True


@parser("lspci_vvv")
def parse_lspci_vvv(text: str) -> list[dict]:
    what = "lspci -vvv output (device lines like '1a:00.0 Ethernet controller: ...')"
    require(text, what)
    devices: list[dict] = []
    for line in lines(text):
        m = None if line[0].isspace() else _DEV_RE.match(line)  # a device line starts at column 0
        if m:
            devices.append(_new(m.group(1), m.group(2)))
        elif devices:
            _field(devices[-1], line)
    if not devices:
        raise fail(what, text)
    for dev in devices:
        if dev["access_denied"] and dev["acs_ctl"] is None:
            dev["acs_redirect"] = None  # unknown: config space beyond 64 bytes needs root
        elif dev["ats_enabled"] is None and not dev["access_denied"]:
            dev["ats_enabled"] = False  # capabilities readable and no ATS capability among them
    return devices
