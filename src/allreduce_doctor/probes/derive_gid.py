"""Derived RoCE facts about GIDs: the port's GID table and the GID NCCL will use.
Registered into derive.DERIVATIONS through derive_roce.py."""

from __future__ import annotations

from allreduce_doctor.domain import NCCL_AUTO_GID_SINCE, nccl_addr_range, nccl_auto_gid, nccl_range_matches, version_tuple
from allreduce_doctor.nccl_rules.defaults import param_int
from allreduce_doctor.nccl_rules.gid import gid_routable
from allreduce_doctor.observations import NOT_APPLICABLE, OK, Observation
from allreduce_doctor.probes.derive_job import blocked_input as _blocked

Inputs = dict[str, Observation]


def gid_table(inputs: Inputs) -> Observation:
    """One flat list of GID entries: port, index, gid, kind, ipv4, version, type (the kernel's
    gid_attrs/types string), ndev (gid_attrs/ndevs: the netdev whose address made the GID)."""
    if (blocked := _blocked(inputs, "rdma.gid_values")) is not None:
        return blocked
    types = {r["name"]: r for r in inputs["rdma.gid_types"].value or []} if inputs["rdma.gid_types"].status == OK else {}
    ndevs = {r["name"]: r for r in inputs["rdma.gid_ndevs"].value or []} if inputs["rdma.gid_ndevs"].status == OK else {}
    entries = []
    for record in inputs["rdma.gid_values"].value:
        port = record["name"]
        if _unread(record):  # the port's table was not read: one entry saying so (gid_choice: unknown)
            entries.append({"port": port, "index": None, "gid": None, "kind": None, "ipv4": None, "version": None,
                            "type": None, "ndev": None, "unread": True})
            continue
        type_record = types.get(port) or {}
        for index, gid in record.items():
            if not str(index).isdigit() or (isinstance(gid, dict) and gid.get("kind") == "empty"):
                continue
            gid = gid if isinstance(gid, dict) else {}  # listed but unreadable or garbled: unknown
            gtype = type_record.get(index) or {}
            entry = {
                "port": port, "index": int(index), "gid": gid.get("gid"), "kind": gid.get("kind"),
                "ipv4": gid.get("ipv4"), "version": gtype.get("version") if isinstance(gtype, dict) else None,
                "type": gtype.get("type") if isinstance(gtype, dict) else None, "ndev": (ndevs.get(port) or {}).get(index),
            }
            if not gid or _unread(type_record) or (index in type_record and not isinstance(type_record[index], dict)):
                entry["unread"] = True
            entries.append(entry)
    entries.sort(key=lambda e: (e["port"], -1 if e["index"] is None else e["index"]))
    return Observation("", entries, OK)


def _unread(record: dict) -> bool:
    """A fan-out record the probe could not read (missing or error; no such hardware is not that)."""
    return record.get("_status") not in (None, NOT_APPLICABLE)


def _auto_gid(entries: list[dict], env_vars: dict, version) -> tuple[int | None, str, dict]:
    """The index NCCL picks when NCCL_IB_GID_INDEX is unset, by its version (domain.py), and what
    NCCL_IB_ADDR_RANGE did to the choice ({} when unset)."""
    parsed = version_tuple(version)
    if parsed is None:
        return None, "NCCL version unknown: its automatic GID choice cannot be emulated", {}
    if parsed < NCCL_AUTO_GID_SINCE:
        return 0, f"NCCL {version} uses GID index 0 unless NCCL_IB_GID_INDEX is set", {}
    family = env_vars.get("NCCL_IB_ADDR_FAMILY") or "AF_INET"
    family = family if family in ("AF_INET", "AF_INET6") else "AF_INET"  # envIbAddrFamily's default
    roce = str(env_vars.get("NCCL_IB_ROCE_VERSION_NUM") or "2").strip()
    how = f"NCCL {version} picks the {family} RoCE v{roce} GID on its own"
    text = env_vars.get("NCCL_IB_ADDR_RANGE")
    try:
        subnet, note = nccl_addr_range(text, family, parsed)
    except ValueError as err:
        return None, str(err), {"addr_range": text}
    table = {e["index"]: e for e in entries}
    index = nccl_auto_gid(table, family, int(roce) if roce.isdigit() else 2, subnet)
    if not text:
        return index, how, {}
    matched = nccl_range_matches(entries, family, subnet) if subnet is not None else None
    if matched is False:
        note += f" matches no {family} GID on this port: NCCL keeps index {index}"
    return index, f"{how}; {note}", {"addr_range": text, "range_matched": matched}


def _witness(entry: dict | None, port: dict) -> dict:
    """The GID itself as the reports name it: its string, type and netdev, and whether that netdev
    is the port's own (a VLAN or macvlan address makes a GID on another netdev)."""
    entry = entry or {}
    ndev, own = entry.get("ndev"), port.get("netdev")
    elsewhere = bool(ndev and own and ndev != own)
    return {"gid": entry.get("gid"), "type": entry.get("type"), "ndev": ndev, "port_netdev": own,
            "ndev_note": f"GID on {ndev}, not the port's netdev {own} (a VLAN or macvlan address)" if elsewhere else None}


def gid_choice(inputs: Inputs) -> Observation:
    """Per RoCE compute port: the GID NCCL will use (index, GID, type, netdev) and whether it
    routes (v2 + IPv4/global)."""
    if (blocked := _blocked(inputs, "rdma.gids", "rdma.compute_ports", "nccl.env")) is not None:
        return blocked
    env_vars = inputs["nccl.env"].value.get("vars") or {}
    pinned = env_vars.get("NCCL_IB_GID_INDEX")
    version = (inputs["nccl.version"].value or {}).get("version") if inputs["nccl.version"].status == OK else None
    by_port: dict[str, list] = {}
    unread_ports = set()
    for entry in inputs["rdma.gids"].value:
        if entry["index"] is None:
            unread_ports.add(entry["port"])
        else:
            by_port.setdefault(entry["port"], []).append(entry)
    choices = []
    for port in inputs["rdma.compute_ports"].value:
        if port.get("link_layer") != "Ethernet":
            continue
        entries = by_port.get(port["name"], [])
        good = [e for e in entries if gid_routable(e.get("kind"), e.get("version"))]
        best = next((e for e in good if e["kind"] == "ipv4"), good[0] if good else None)
        choice = {"name": port["name"], "port": port["name"], "pinned": pinned, "recommended_index": best["index"] if best else None}
        read = param_int(pinned)  # NCCL_PARAM: strtoll base 0, an empty value keeps the default
        if read is None or read < 0:  # ncclIbGetGidIndex: "if (*gidIndex >= 0)" pins it (v2.21.5-1..v2.30.7-1)
            idx, how, ranged = _auto_gid(entries, env_vars, version)
            choice.update(mode="auto", how=how, nccl_version=version, **ranged)
        else:
            idx = read
            choice.update(mode="pinned")
        entry = next((e for e in entries if e["index"] == idx), None)
        routable = bool(entry and gid_routable(entry.get("kind"), entry.get("version")))
        # a table not read, or the chosen entry unreadable, decides nothing (a bundle's damage, a read error)
        unknown = port["name"] in unread_ports or bool(entry and entry.get("unread")) \
            or (choice["mode"] == "auto" and any(e.get("unread") for e in entries))
        choice.update(index=idx, kind=entry and entry.get("kind"), version=entry and entry.get("version"),
                      routable=None if unknown or (idx is None and choice["mode"] == "auto") else routable,
                      **_witness(entry, port))
        choices.append(choice)
    return Observation("", choices, OK if choices else NOT_APPLICABLE, reason="" if choices else "no RoCE compute ports")
