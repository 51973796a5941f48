"""Host tool outputs users paste beside an NCCL log: `ulimit -l`, `df -h /dev/shm`, `lsmod`,
`ibv_devices` and `fi_info`. Each parser reads the tool's own print format (cited per parser)."""

from __future__ import annotations

import re

from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, lines, require

# bash builtins/ulimit.def: `ulimit -l` prints the limit in 1024-byte blocks or "unlimited";
# `ulimit -a` prints "max locked memory           (kbytes, -l) 64".
_ULIMIT_RE = re.compile(r"^\s*(?:max locked memory\s+\(kbytes, -l\)\s+)?(unlimited|[0-9]{1,15})\s*$")


@parser("ulimit_memlock")
def parse_ulimit_memlock(text: str) -> dict:
    """{"memlock": bytes or "unlimited"} from the value line(s) after `ulimit -l` or from `ulimit -a`."""
    require(text, "`ulimit -l` output")
    for line in lines(text):
        m = _ULIMIT_RE.match(line)
        if m:
            value = m.group(1)
            return {"memlock": "unlimited" if value == "unlimited" else int(value) * 1024}
    raise fail("`ulimit -l` output (a number of KiB or unlimited)", text)


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
_SIZE_RE = re.compile(r"^([0-9]{1,15}(?:\.[0-9]{1,6})?)([KMGTP]?)i?B?$", re.IGNORECASE)
_DF_ROW_RE = re.compile(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+([0-9]{1,3}%|-)\s+(/\S*)\s*$")


def size_bytes(text: str, block: int = 1) -> int | None:
    """'64M' -> 67108864 (df -h prints powers of 1024, coreutils human.c); a bare number is `block` units."""
    m = _SIZE_RE.match(text.strip())
    if m is None:
        return None
    unit = m.group(2).upper()
    return int(float(m.group(1)) * (_UNITS[unit] if unit else block))


@parser("df")
def parse_df(text: str) -> list[dict]:
    """coreutils `df [-h]`: the header then one row per filesystem (1K blocks without -h)."""
    require(text, "`df` output")
    block = 1024
    rows = []
    for line in lines(text):
        if line.lstrip().startswith("Filesystem"):
            block = 1 << 20 if "1M-blocks" in line else 1024
            continue
        m = _DF_ROW_RE.match(line.strip())
        if m:
            fs, size, used, avail, use, mount = m.groups()
            rows.append({"filesystem": fs, "size": size, "size_bytes": size_bytes(size, block),
                         "avail_bytes": size_bytes(avail, block), "use": use, "mount": mount})
    if not rows:
        raise fail("`df` rows (Filesystem Size Used Avail Use% Mounted on)", text)
    return rows


_LSMOD_RE = re.compile(r"^([A-Za-z0-9_-]+)\s+([0-9]{1,12})\s+([0-9]{1,6}|-)(?:\s+(\S+))?\s*$")


@parser("lsmod")
def parse_lsmod(text: str) -> dict:
    """kmod tools/lsmod.c: "Module  Size  Used by" then NAME SIZE REFCOUNT [USERS]. `complete` is
    True only with the header (an unfiltered listing): a `lsmod | grep` excerpt proves no absence."""
    require(text, "`lsmod` output")
    modules: dict[str, dict] = {}
    header = False
    for line in lines(text):
        if re.match(r"^\s*Module\s+Size\s+Used by\s*$", line):
            header = True
            continue
        m = _LSMOD_RE.match(line.strip())
        if m:
            name, size, used, users = m.groups()
            modules[name.replace("-", "_")] = {"size": int(size), "used": int(used) if used.isdigit() else None,
                                               "by": users.split(",") if users else []}
    if not modules:
        raise fail("`lsmod` rows (Module Size Used by)", text)
    return {"modules": modules, "complete": header}


_DEVICES_RE = re.compile(r"^\s*([\w.-]+)\s+([0-9a-fA-F]{16})\s*$")


@parser("ibv_devices")
def parse_ibv_devices(text: str) -> list[dict]:
    """rdma-core libibverbs/examples/devices.c: "device  node GUID", a rule, then DEVICE GUID rows."""
    require(text, "`ibv_devices` output")
    rows = [{"device": m.group(1), "node_guid": m.group(2).lower()}
            for line in lines(text) if (m := _DEVICES_RE.match(line)) and m.group(1) != "device"]
    if not rows and not any("node GUID" in line for line in lines(text)):
        raise fail("`ibv_devices` output (device / node GUID)", text)
    return rows  # the header alone: no RDMA device is visible


_FI_FIELD_RE = re.compile(r"^\s*(provider|fabric|domain|version|type|protocol):\s*(.*?)\s*$")


@parser("fi_info")
def parse_fi_info(text: str) -> list[dict]:
    """libfabric util/info.c (`fi_info [-p PROV]`, terse form): a `provider:` line, then indented
    fabric, domain, version, type and protocol of each fi_info entry."""
    require(text, "`fi_info` output")
    entries: list[dict] = []
    for line in lines(text):
        m = _FI_FIELD_RE.match(line)
        if m is None:
            continue
        if m.group(1) == "provider":
            entries.append({"provider": m.group(2)})
        elif entries:
            entries[-1][m.group(1)] = m.group(2)
    if not entries:
        raise fail("`fi_info` entries (provider: NAME)", text)
    return entries
