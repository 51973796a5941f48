"""Pasted tool output as the node's own facts: the same observations, in the same record shapes,
that the probes of probes/*.yaml make on a live node, with FILE:LINE as their source. The node
derivations (probes/derive*.py) and the trunk/IB/RoCE runbooks then decide a paste unchanged.

What each tool tells (and which probe reads the same thing on a node):
  ibstat, ibstatus, ibv_devinfo   -> rdma.ports (state, physical state, rate, link layer, LIDs,
                                     CA type, firmware), as /sys/class/infiniband/DEV/ports/N does
  rdma link show                  -> rdma.ports too (state, physical state, link layer, LIDs, netdev)
  ibdev2netdev, show_gids         -> the netdev of each port (the enumerator's `netdev`)
  show_gids, ibv_devinfo -v       -> rdma.gid_values / rdma.gid_types / rdma.gid_ndevs
  mlnx_qos -i IF                  -> net.qos_mlnx (the interface from the `$ mlnx_qos -i IF` line)
  lspci -vvv                      -> pci.lspci, and pci.nics / pci.gpus (LnkCap and LnkSta are the
                                     max_link_* and current_link_* of sysfs: the kernel reads both
                                     from the same registers, drivers/pci/pci-sysfs.c)
  nvidia-smi topo -m / nvlink -s / -q, dmesg, /proc/cmdline -> gpu.topo, gpu.nvlink, gpu.fabric,
                                     kernel.dmesg, kernel.cmdline
  NCCL variables (log lines, exports, launcher -x) -> nccl.env
A single `ethtool -S` sample has no rate: counter facts stay unknown (two samples decide).
When the paste names the hosts its outputs come from (a shell prompt `root@gpu01:~#` or `ssh gpu01`
before the command), each host's tables stay apart: the facts made here are those of one host, never
a mix of two hosts' tables. A paste naming several hosts is read again per host (evidence/hosts.py),
each host's part giving that host's facts; where one node's facts are all that is used (a paste
beside --snapshot), they are the first named host's and the report names the others (`hosts_not_read`).
Outputs with no host named are taken as the named host's.
"""

from __future__ import annotations

from allreduce_doctor.errors import ParseError
from allreduce_doctor.evidence.lines import Where
from allreduce_doctor.observations import OK, Observation
from allreduce_doctor.parsers import parse
from allreduce_doctor.parsers.sysfs import IB_STATES

# Outputs a probe reads itself (same parser): the block's value is the probe's value.
SAME_AS_PROBE = {
    "ibv_devinfo": "tools.ibv_devinfo",
    "ibstat": "tools.ibstat",
    "show_gids": "tools.show_gids",
    "ibdev2netdev": "tools.ibdev2netdev",
    "lspci": "pci.lspci",
    "nvidia_smi_topo": "gpu.topo",
    "nvidia_smi_nvlink": "gpu.nvlink",
    "nvidia_smi_q": "gpu.fabric",
}


# ibstat's own words for a port's state, indexed by the state's code (infiniband-diags ibstat.c
# port_state_str, rdma-core v64.0): "Initializing" is the kernel's "2: INIT" (IB_STATES, parsers/sysfs.py).
IBSTAT_STATES = ("???", "Down", "Initializing", "Armed", "Active")


def _coded(kind: str, raw) -> dict | None:
    """'Active' / 'PORT_ACTIVE' / '4: ACTIVE' / 'Initializing' -> the {"code", "name"} the sysfs parser gives."""
    if isinstance(raw, dict):
        return raw if "code" in raw else None
    if raw in (None, ""):
        return None
    if kind == "ib_state" and str(raw).strip() in IBSTAT_STATES[1:]:
        code = IBSTAT_STATES.index(str(raw).strip())
        return {"code": code, "name": IB_STATES[code]}
    try:
        return parse(kind, str(raw))
    except ParseError:
        return {"code": None, "name": str(raw).strip().upper()}


def port_record(dev: str, num, where: str, **fields) -> dict:
    """One rdma.ports record, in the rdma_ports probe's shape (fields it does not name stay None)."""
    return _port(dev, num, where, **fields)


def _port(dev: str, num, where: str, **fields) -> dict:
    rec = {"device": dev, "port": str(num), "name": f"{dev}/{num}", "link_layer": None, "hca_type": None,
           "fw_ver": None, "netdev": None, "pci_bdf": None, "state": None, "phys_state": None, "rate": None,
           "lid": None, "sm_lid": None, "source": where}
    rec.update({k: v for k, v in fields.items() if v is not None})
    return rec


def _merge(ports: dict[str, dict], rec: dict) -> None:
    """One record per port: a later tool fills what an earlier one did not say."""
    have = ports.get(rec["name"])
    if have is None:
        ports[rec["name"]] = rec
        return
    for key, value in rec.items():
        if have.get(key) is None and value is not None:
            have[key] = value
    if isinstance(have.get("rate"), dict) and isinstance(rec.get("rate"), dict):
        for key, value in rec["rate"].items():
            if have["rate"].get(key) is None:
                have["rate"][key] = value


def _ports_ibstat(block: dict) -> list[dict]:
    out = []
    for dev, info in (block["value"].get("devices") or {}).items():
        for num, p in (info.get("ports") or {}).items():
            rate = p.get("rate")
            out.append(_port(dev, num, block["where"], link_layer=p.get("link_layer"), hca_type=info.get("ca_type"),
                             fw_ver=info.get("firmware"), state=_coded("ib_state", p.get("state")),
                             phys_state=_coded("ib_phys_state", p.get("physical_state")),
                             rate={"gbps": float(rate), "width": None, "speed": None} if rate is not None else None,
                             lid=p.get("base_lid"), sm_lid=p.get("sm_lid")))
    return out


def _ports_ibstatus(block: dict) -> list[dict]:
    out = []
    for name, p in (block["value"].get("ports") or {}).items():
        dev, _, num = name.partition("/")
        out.append(_port(dev, num or "1", block["where"], link_layer=p.get("link_layer"), state=p.get("state"),
                         phys_state=p.get("phys_state"), rate=dict(p["rate"]) if p.get("rate") else None,
                         lid=p.get("base_lid"), sm_lid=p.get("sm_lid")))
    return out


def _ports_devinfo(block: dict) -> list[dict]:
    out = []
    for dev, info in (block["value"].get("devices") or {}).items():
        part = info.get("vendor_part_id")
        for num, p in (info.get("ports") or {}).items():
            gbps = p.get("rate_gbps")
            out.append(_port(dev, num, block["where"], link_layer=p.get("link_layer"),
                             hca_type=f"MT{part}" if part else None, fw_ver=info.get("fw_ver"),
                             state=_coded("ib_state", p.get("state")), phys_state=_coded("ib_phys_state", p.get("phys_state")),
                             rate={"gbps": gbps, "width": p.get("active_width"), "speed": None} if gbps else None,
                             lid=p.get("port_lid"), sm_lid=p.get("sm_lid")))
    return out


def _ports_rdma_link(block: dict) -> list[dict]:
    out = []
    for name, p in (block["value"].get("ports") or {}).items():
        dev, _, num = name.partition("/")
        out.append(_port(dev, num, block["where"], link_layer=p["link_layer"], netdev=p.get("netdev"),
                         state=_coded("ib_state", p["state"]), phys_state=_coded("ib_phys_state", p.get("physical_state")),
                         lid=p.get("lid"), sm_lid=p.get("sm_lid")))
    return out


_PORT_READERS = {"ibstat": _ports_ibstat, "ibstatus": _ports_ibstatus, "ibv_devinfo": _ports_devinfo,
                 "rdma_link": _ports_rdma_link}


def _first_blocks(blocks: list[dict]) -> dict[str, dict]:
    """The first parsed block of each tool (several hosts pasted: the first host's)."""
    first: dict[str, dict] = {}
    for b in blocks:
        if b["value"] is not None and b["tool"] not in first:
            first[b["tool"]] = b
    return first


def rdma_ports(blocks: list[dict]) -> tuple[list[dict], Where]:
    ports: dict[str, dict] = {}
    where = Where()
    first = _first_blocks(blocks)
    for tool in ("ibstat", "ibv_devinfo", "ibstatus", "rdma_link"):
        block = first.get(tool)
        if block is not None:
            for rec in _PORT_READERS[tool](block):
                _merge(ports, rec)
            where.add_range(block["file"], block["first"], block["last"])
    netdevs = {}
    if "ibdev2netdev" in first:
        netdevs.update({f"{r['device']}/{r['port']}": r["netdev"] for r in first["ibdev2netdev"]["value"]})
    if "show_gids" in first:
        for r in first["show_gids"]["value"]:
            if r.get("ndev"):
                netdevs.setdefault(f"{r['dev']}/{r['port']}", r["ndev"])
    for name, rec in ports.items():
        rec["netdev"] = rec["netdev"] or netdevs.get(name)
    return sorted(ports.values(), key=lambda r: r["name"]), where


def gid_tables(blocks: list[dict]) -> dict[str, list[dict]] | None:
    """rdma.gid_values / gid_types / gid_ndevs records (one per port), as the sysfs probes make."""
    first = _first_blocks(blocks)
    values: dict[str, dict] = {}
    types: dict[str, dict] = {}
    ndevs: dict[str, dict] = {}

    def add(port: str, index: int, gid: str, version: int | None, ndev: str | None) -> None:
        dev, _, num = port.partition("/")
        base = {"device": dev, "port": num, "name": port}
        try:
            values.setdefault(port, dict(base))[str(index)] = parse("gid", gid)
        except ParseError:
            return
        if version:
            types.setdefault(port, dict(base))[str(index)] = {"type": "RoCE v2" if version == 2 else "IB/RoCE v1",
                                                              "version": version}
        if ndev:
            ndevs.setdefault(port, dict(base))[str(index)] = ndev

    if "show_gids" in first:
        for r in first["show_gids"]["value"]:
            add(f"{r['dev']}/{r['port']}", r["index"], r["gid"], r.get("version"), r.get("ndev"))
    elif "ibv_devinfo" in first:
        for dev, info in (first["ibv_devinfo"]["value"].get("devices") or {}).items():
            for num, p in (info.get("ports") or {}).items():
                for g in p.get("gids") or []:
                    low = str(g.get("type") or "").lower()
                    add(f"{dev}/{num}", g["index"], g["gid"], 2 if "v2" in low else 1 if "v1" in low else None, None)
    if not values:
        return None
    return {"rdma.gid_values": list(values.values()), "rdma.gid_types": list(types.values()),
            "rdma.gid_ndevs": list(ndevs.values())}


def qos_records(blocks: list[dict]) -> list[tuple[dict, str]]:
    """net.qos_mlnx records, one per pasted `mlnx_qos -i IF` (the interface must be named)."""
    out, seen = [], set()
    for b in blocks:
        if b["tool"] == "mlnx_qos" and b["value"] and b.get("iface") and b["iface"] not in seen:
            seen.add(b["iface"])
            out.append((dict(b["value"], name=b["iface"], netdev=b["iface"]), b["where"]))
    return out


def pci_links(lspci: list[dict], where: str) -> dict[str, list[dict]]:
    """pci.nics / pci.gpus from lspci -vvv: LnkCap is the device's max, LnkSta its current link."""
    nics, gpus = [], []
    for dev in lspci:
        cap, sta = dev.get("lnkcap") or {}, dev.get("lnksta") or {}
        if not cap or not sta:
            continue  # capabilities hidden (lspci as non-root) or no PCIe link
        rec = {"bdf": dev["bdf"], "name": dev["bdf"], "current_speed_gts": sta.get("speed_gts"),
               "max_speed_gts": cap.get("speed_gts"), "current_width": sta.get("width"), "max_width": cap.get("width"),
               "numa_node": dev.get("numa_node"), "source": where}
        if dev.get("kind") == "nic":  # parsers/lspci.py device_kind
            nics.append(rec)
        elif dev.get("kind") == "gpu":
            gpus.append(rec)
    return {"pci.nics": nics, "pci.gpus": gpus}


def nccl_env(env: dict, sources: dict) -> dict:
    """nccl.env as the derivation makes it, from the variables the paste shows. A paste shows only
    some of the job's variables, so it is not "the job's whole environment" (job_found False):
    a derivation that needs an unset variable's default stays unknown."""
    return {"vars": dict(sorted(env.items())), "origin": {k: f"pasted evidence ({sources.get(k, '?')})" for k in env},
            "job_found": False, "processes": 0, "conflicts": {}, "pasted": True}


def host_key(name: str) -> str:
    """A host as a paste names it, compared case-blind up to its first dot: NCCL's `host:pid:tid`
    prefix is the name up to its first dot (NCCL src/debug.cc, ncclDebugInit: getHostName(hostname,
    1024, '.')), as bash's \\h prompt is, while `ssh HOST` may give the full name."""
    name = name.strip().lower()
    first = name.split(".", 1)[0]
    return name if first.isdigit() else first  # an IPv4 address stays whole


def hosts_of(blocks: list[dict]) -> list[str]:
    """The hosts the pasted tool outputs name (host_key), in the order they first appear."""
    seen: list[str] = []
    for b in blocks:
        if b.get("host") and host_key(b["host"]) not in seen:
            seen.append(host_key(b["host"]))
    return seen


def one_host(blocks: list[dict]) -> list[dict]:
    """The blocks of the first named host (and those naming none): two hosts' tables never mix."""
    hosts = hosts_of(blocks)
    if len(hosts) < 2:
        return blocks
    return [b for b in blocks if not b.get("host") or host_key(b["host"]) == hosts[0]]


def observations(blocks: list[dict], env: dict, env_sources: dict, cmdline: dict | None,
                 dmesg: tuple[list, str] | None) -> list[Observation]:
    """Every node fact the pasted outputs show, as the probe's own Observation."""
    blocks = one_host(blocks)
    out: dict[str, Observation] = {}

    def add(fact: str, value, where: str, tool: str) -> None:
        if fact not in out:
            out[fact] = Observation(fact, value, OK, where, "", f"evidence:{tool}")

    for b in blocks:
        fact = SAME_AS_PROBE.get(b["tool"])
        if fact is None or b["value"] is None:
            continue
        if fact == "gpu.nvlink" and not b.get("links_listed"):
            continue  # nvidia-smi -L: GPU names, no links
        add(fact, b["value"], b["where"], b["tool"])
    ports, where = rdma_ports(blocks)
    if ports:
        add("rdma.ports", ports, where.text(), "rdma_tools")
    for fact, records in (gid_tables(blocks) or {}).items():
        if records:
            add(fact, records, "pasted GID table", "gid_table")
    qos = qos_records(blocks)
    if qos:
        add("net.qos_mlnx", [r for r, _ in qos], ", ".join(w for _, w in qos), "mlnx_qos")
    if "pci.lspci" in out:
        for fact, records in pci_links(out["pci.lspci"].value, out["pci.lspci"].source).items():
            if records:
                add(fact, records, out["pci.lspci"].source, "lspci")
    if env:
        add("nccl.env", nccl_env(env, env_sources), ", ".join(sorted(set(env_sources.values())))[:300], "environment")
    if cmdline:
        add("kernel.cmdline", cmdline["value"], cmdline["source"], "proc_cmdline")
    if dmesg:
        add("kernel.dmesg", dmesg[0][:5000], dmesg[1], "kernel_log")
    return list(out.values())
