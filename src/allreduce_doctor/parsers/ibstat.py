"""`ibstat` and `ibstatus` (infiniband-diags): per-HCA, per-port link state.

Both are parsed line by line on their markers (`CA '...'`, `Port N:`, `Infiniband device
'...' port N status:`), never on indentation: pasted copies lose tabs.
"""

from __future__ import annotations

import re

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, kv, lead_num, lines, require, snake, to_int
from allreduce_doctor.parsers.sysfs import parse_ib_phys_state, parse_ib_rate, parse_ib_state

_CA_RE = re.compile(r"^\s*CA\s+'([^']+)'\s*$")
_PORT_RE = re.compile(r"^\s*Port\s+([0-9]+)\s*:\s*$", re.ASCII)
# ibstat aborts with `ibpanic: [pid] main: stat of IB device 'mlx5_8' failed: ...` (exit 255).
_ERROR_RE = re.compile(r"^\s*(ibpanic|ibwarn|iberror|ibstat)\s*:", re.IGNORECASE)
_STATUS_RE = re.compile(r"^\s*Infiniband device\s+'([^']+)'\s+port\s+([0-9]+)\s+status\s*:", re.ASCII)

_DEVICE_KEYS = {
    "CA type": "ca_type",
    "Number of ports": "num_ports",
    "Firmware version": "firmware",
    "Hardware version": "hardware_version",
    "Node GUID": "node_guid",
    "System image GUID": "system_image_guid",
}
_PORT_KEYS = {
    "State": "state",
    "Physical state": "physical_state",
    "Rate": "rate",
    "Base lid": "base_lid",
    "LMC": "lmc",
    "SM lid": "sm_lid",
    "Capability mask": "capability_mask",
    "Port GUID": "port_guid",
    "Link layer": "link_layer",
}
_INT_FIELDS = {"num_ports", "base_lid", "lmc", "sm_lid"}


def _value(field: str, raw: str):
    if field in _INT_FIELDS:
        return to_int(raw)
    if field == "rate":  # ibstat prints the rate in Gb/s as a bare number
        return lead_num(raw)
    return raw


@parser("ibstat")
def parse_ibstat(text: str) -> dict:
    what = "ibstat output (CA '<name>' blocks)"
    require(text, what)
    devices: dict[str, dict] = {}
    errors: list[str] = []
    device: dict | None = None
    port: dict | None = None
    for line in lines(text):
        if _ERROR_RE.match(line):
            errors.append(line.strip())
            continue
        m = _CA_RE.match(line)
        if m:
            device = {"ports": {}}
            devices[m.group(1)] = device
            port = None
            continue
        m = _PORT_RE.match(line)
        if m and device is not None:
            port = {}
            device["ports"][m.group(1)] = port
            continue
        pair = kv(line)
        if pair is None or device is None:
            continue  # shell prompts and prose around pasted output
        key, raw = pair
        if port is not None:
            field = _PORT_KEYS.get(key, snake(key))
            port[field] = _value(field, raw)
        else:
            field = _DEVICE_KEYS.get(key, snake(key))
            if field == "ports":  # the table built from the Port N: blocks; never a line's value
                continue
            device[field] = _value(field, raw)
    if not devices and not errors:
        raise fail(what, text)
    return {"devices": devices, "errors": errors}


def _or_none(fn, raw: str):
    """One odd field must not lose the other ports."""
    try:
        return fn(raw)
    except ParseError:
        return None


_STATUS_FIELDS = {
    "default_gid": lambda raw: None if raw.lower() == "unknown" else raw,
    "base_lid": to_int,
    "sm_lid": to_int,
    "state": lambda raw: _or_none(parse_ib_state, raw),
    "phys_state": lambda raw: _or_none(parse_ib_phys_state, raw),
    "rate": lambda raw: _or_none(parse_ib_rate, raw),
}


@parser("ibstatus")
def parse_ibstatus(text: str) -> dict:
    what = "ibstatus output (Infiniband device '<name>' port N status: blocks)"
    require(text, what)
    ports: dict[str, dict] = {}
    port: dict | None = None
    for line in lines(text):
        m = _STATUS_RE.match(line)
        if m:
            port = {}
            ports[f"{m.group(1)}/{m.group(2)}"] = port
            continue
        pair = kv(line)
        if pair is None or port is None:
            continue
        field = snake(pair[0])
        convert = _STATUS_FIELDS.get(field)
        port[field] = convert(pair[1]) if convert else pair[1]
    if not ports:
        raise fail(what, text)
    return {"ports": ports}
