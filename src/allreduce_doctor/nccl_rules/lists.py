"""NCCL's list syntax for NCCL_IB_HCA, NCCL_SOCKET_IFNAME (and NCCL_OOB_NET_IFNAME), as NCCL reads it.

The caller strips one leading `^` (exclude), then one `=` (exact names), in that order
(transport/net_ib init.cc ncclIbInitDevices, misc/socket.cc / os/linux.cc ncclFindInterfaces,
v2.12.12-1..v2.30.7-1): `=^x` is the prefix list "^x", `^^x` excludes the prefix "^x".
parseStringList (src/misc/utils.cc) splits on `,` and keeps every byte, spaces too:
- v2.7.8-1..v2.30.4-1 (one function at every tag checked): an item is `<prefix>[:<port>]`, port =
  atoi(what follows the first ':'), so
  `mlx5_0:1:0:0` is port 1 and `mlx5_0:` or `mlx5_0::0:0` is port 0 (no port matches it);
- from v2.30.7-1: `<hca>[:<port>[:<rail>[:<plane>]]]` (env.rst NCCL_IB_HCA), each field atoi'd,
  an empty or absent field -1, so `mlx5_0::0:0` takes every port of mlx5_0.
matchIfList: an empty list matches everything; a name matches an item exactly (`=`) or by prefix
(strncmp over the item's length); a port matches when either side is -1 or they are equal.
Interfaces are matched with port -1 (ncclFindInterfaces), so an item's port never excludes one.
"""

from __future__ import annotations

from dataclasses import dataclass

from allreduce_doctor.nccl_rules.versions import version_tuple

RAIL_GRAMMAR_SINCE = (2, 30, 7)  # utils.cc parseStringList with ncclOsStrSep fields (v2.30.4-1 still atoi)


@dataclass(frozen=True)
class Item:
    prefix: str
    port: int  # -1: any port
    rail: int = -1
    plane: int = -1


@dataclass(frozen=True)
class NcclList:
    exclude: bool
    exact: bool
    items: tuple[Item, ...]

    def selects(self, name: str, port: int | str | None = None) -> bool:
        """matchIfList(name, port, ...) ^ searchNot: whether NCCL takes this device/port or interface."""
        want = _port(port)
        hit = not self.items or any(_name_matches(name, i.prefix, self.exact) and (want == -1 or i.port in (-1, want))
                                    for i in self.items)
        return hit != self.exclude

    @property
    def names(self) -> list[str]:
        return [i.prefix for i in self.items]


def _port(port) -> int:
    if port is None or port == "":
        return -1
    try:
        return int(port)
    except (TypeError, ValueError):
        return -1


def _name_matches(name: str, prefix: str, exact: bool) -> bool:
    return name == prefix if exact else name.startswith(prefix)


def atoi(text: str) -> int:
    """C's atoi: leading whitespace, an optional sign, then digits; 0 when none."""
    s = text.lstrip(" \t\n\v\f\r")
    sign, digits = 1, ""
    if s[:1] in ("+", "-"):
        sign, s = (-1 if s[0] == "-" else 1), s[1:]
    for ch in s:
        if not ch.isdigit():
            break
        digits += ch
    return sign * int(digits) if digits else 0


def grammar(version) -> str | None:
    """'rail' (v2.30.7-1 on), 'port' (before), None when the version is unknown."""
    parsed = version_tuple(version)
    if parsed is None:
        return None
    return "rail" if parsed >= RAIL_GRAMMAR_SINCE else "port"


def parse(spec: str, version=None) -> NcclList:
    """The list as the job's NCCL reads it. With the version unknown the newer grammar is used:
    the two read a list the same way except an empty port field (`dev:` / `dev::rail:plane`), see
    `depends_on_version`."""
    text = str(spec)
    exclude = text.startswith("^")
    text = text[1:] if exclude else text
    exact = text.startswith("=")
    text = text[1:] if exact else text
    items = []
    old = grammar(version) == "port"
    for entry in text.split(","):
        if not entry:
            continue
        head, colon, rest = entry.partition(":")
        if not head:
            continue  # an item with no name: both grammars skip it
        if old:
            items.append(Item(head, atoi(rest) if colon else -1))
            continue
        fields = rest.split(":") if colon else []
        nums = [atoi(f) if f else -1 for f in fields[:3]] + [-1] * 3
        items.append(Item(head, nums[0], nums[1], nums[2]))
    return NcclList(exclude, exact, tuple(items))


def depends_on_version(spec: str) -> bool:
    """An item with an empty port field: port 0 (nothing) before v2.30.7-1, any port from it."""
    body = str(spec).lstrip("^").lstrip("=")
    return any(":" in e and e.partition(":")[2].split(":")[0] == "" for e in body.split(",") if e.partition(":")[0])


def selects(spec: str, name: str, port=None, version=None) -> bool:
    return parse(spec, version).selects(name, port)


def selects_port(spec: str, port_name: str, version=None) -> bool:
    """For 'dev/port' names (mlx5_0/1), the form the port tables use."""
    dev, _, num = str(port_name).partition("/")
    return parse(spec, version).selects(dev, num or None)
