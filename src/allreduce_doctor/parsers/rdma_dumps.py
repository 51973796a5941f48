"""RDMA counter dumps users paste: `rdma statistic show` (iproute2) and `grep . /sys/class/infiniband/...`.

One dump is one sample: a rate needs two (probes/rates.py), so these values are shown, never judged
as a rate here."""

from __future__ import annotations

import re

from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, lines, require

_STAT_RE = re.compile(r"^\s*link\s+([\w.-]+/[0-9]+)\s+(.*)$")


@parser("rdma_statistic")
def parse_rdma_statistic(text: str) -> dict[str, dict[str, int]]:
    """iproute2 rdma/stat.c (`rdma statistic show [link DEV/PORT]`): one line per port,
    `link DEV/PORT` then NAME VALUE pairs -> {"DEV/PORT": {NAME: int}}."""
    require(text, "`rdma statistic show` output")
    ports: dict[str, dict[str, int]] = {}
    for line in lines(text):
        m = _STAT_RE.match(line)
        if m is None:
            continue
        tokens = m.group(2).split()
        counters = ports.setdefault(m.group(1), {})
        for name, value in zip(tokens[::2], tokens[1::2]):
            if value.isascii() and value.isdigit():
                counters[name] = int(value)
    if not any(ports.values()):
        raise fail("`rdma statistic show` lines (link DEV/PORT NAME VALUE ...)", text)
    return ports


# GNU grep prints FILE:LINE for several files (`grep . /sys/.../counters/*`); Linux
# Documentation/ABI/stable/sysfs-class-infiniband names ports/N/{counters,hw_counters}/NAME.
_SYSFS_RE = re.compile(r"^\s*/sys/class/infiniband/([\w.-]+)/ports/([0-9]+)/(counters|hw_counters)/(\w+):\s*([0-9]{1,20})\s*$")
_ANY_SYSFS_RE = re.compile(r"^\s*(/sys/\S+?):(.*)$")


@parser("sysfs_dump")
def parse_sysfs_dump(text: str) -> dict:
    """{"ports": {"DEV/PORT": {"counters": {..}, "hw_counters": {..}}}, "files": {PATH: TEXT}}."""
    require(text, "a sysfs dump (PATH:VALUE lines)")
    ports: dict[str, dict] = {}
    files: dict[str, str] = {}
    for line in lines(text):
        m = _SYSFS_RE.match(line)
        if m:
            dev, port, group, name, value = m.groups()
            ports.setdefault(f"{dev}/{port}", {}).setdefault(group, {})[name] = int(value)
            continue
        m = _ANY_SYSFS_RE.match(line)
        if m and len(files) < 2000:
            files[m.group(1)] = m.group(2).strip()
    if not ports and not files:
        raise fail("a sysfs dump (PATH:VALUE lines)", text)
    return {"ports": ports, "files": files}
