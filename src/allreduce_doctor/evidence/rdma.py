"""log.rdma: what pasted RDMA tool output says about ports, GIDs, MTUs and NIC settings.

Each port record comes from one block (ibstat, ibstatus, ibv_devinfo, rdma link or a GID fragment), so
ports of two nodes pasted one after the other stay apart; peers are compared within the paste.
"""

from __future__ import annotations

from collections import Counter

from allreduce_doctor.domain import adapter_model
from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers.sysfs import gid_info

_STATE = {"active": "ACTIVE", "port_active": "ACTIVE", "down": "DOWN", "port_down": "DOWN", "init": "INIT",
          "port_init": "INIT", "initializing": "INIT", "armed": "ARMED", "polling": "DOWN"}  # ibstat.c port_state_str




def _state(raw) -> str | None:
    if isinstance(raw, dict):
        raw = raw.get("name")
    if not raw:
        return None
    return _STATE.get(str(raw).strip().lower().replace(" ", "_"), str(raw).strip().upper())


def _port(block: dict, name: str, **kw) -> dict:
    rec = {"name": name, "state": None, "phys_state": None, "rate_gbps": None, "width": None, "speed": None,
           "link_layer": None, "lid": None, "sm_lid": None, "active_mtu": None, "max_mtu": None, "model": None,
           "source": block["where"], "tool": block["tool"]}
    rec.update({k: v for k, v in kw.items() if v is not None})
    if rec["link_layer"] is None and rec["state"] == "ACTIVE" and rec["lid"] == 0 and rec["sm_lid"] in (0, None):
        rec["link_layer"], rec["layer_inferred"] = "Ethernet", True  # an active IB port always has a LID
    return rec


def _from_ibstat(block: dict) -> list[dict]:
    out = []
    for dev, info in (block["value"].get("devices") or {}).items():
        for num, p in (info.get("ports") or {}).items():
            rate = p.get("rate")
            out.append(_port(block, f"{dev}/{num}", state=_state(p.get("state")), phys_state=p.get("physical_state"),
                             rate_gbps=rate, link_layer=p.get("link_layer"), lid=p.get("base_lid"),
                             sm_lid=p.get("sm_lid"), model=adapter_model(info.get("ca_type"))))
    return out


def _from_ibstatus(block: dict) -> list[dict]:
    out = []
    for name, p in (block["value"].get("ports") or {}).items():
        rate = p.get("rate") or {}
        out.append(_port(block, name, state=_state(p.get("state")), phys_state=(p.get("phys_state") or {}).get("name"),
                         rate_gbps=rate.get("gbps"), width=rate.get("width"), speed=rate.get("speed"),
                         link_layer=p.get("link_layer"), lid=p.get("base_lid"), sm_lid=p.get("sm_lid")))
    return out


def _from_rdma_link(block: dict) -> list[dict]:
    return [_port(block, name, state=_state(p["state"]), phys_state=p.get("physical_state"), link_layer=p["link_layer"],
                  lid=p.get("lid"), sm_lid=p.get("sm_lid")) for name, p in (block["value"].get("ports") or {}).items()]


def _from_devinfo(block: dict, value: dict) -> list[dict]:
    out = []
    for dev, info in (value.get("devices") or {}).items():
        for num, p in (info.get("ports") or {}).items():
            out.append(_port(block, f"{dev}/{num}", state=_state(p.get("state")), phys_state=p.get("phys_state"),
                             rate_gbps=p.get("rate_gbps"), width=p.get("active_width"), link_layer=p.get("link_layer"),
                             lid=p.get("port_lid"), sm_lid=p.get("sm_lid"), active_mtu=p.get("active_mtu"),
                             max_mtu=p.get("max_mtu"), model=info.get("vendor_part_id")))
    return out


def _gids_devinfo(block: dict, value: dict) -> list[dict]:
    out = []
    for dev, info in (value.get("devices") or {}).items():
        for num, p in (info.get("ports") or {}).items():
            for g in p.get("gids") or []:
                out.append(_gid(block, f"{dev}/{num}" if dev else "?", g["index"], g["gid"], g.get("type")))
    return out


def _gid(block: dict, port: str, index: int, gid: str, gtype: str | None, ndev: str | None = None) -> dict:
    try:
        info = gid_info(gid)
    except ParseError:
        info = {"gid": gid, "kind": None, "ipv4": None}
    version = None
    if gtype:
        low = str(gtype).lower()
        version = 2 if "v2" in low else 1 if "v1" in low else None
    return {"port": port, "index": index, "gid": info["gid"], "kind": info["kind"], "ipv4": info["ipv4"],
            "version": version, "ndev": ndev, "source": block["where"]}


def _fragment_devinfo(block: dict) -> dict:
    """A fragment of ibv_devinfo -v (GID lines, a few port fields) read by the real parser."""
    from allreduce_doctor.parsers import parse

    text = "hca_id:\t?\n\tport:\t1\n" + "\n".join(block["lines"] or []) + "\n"
    try:
        return parse("ibv_devinfo", text)
    except ParseError:
        return {"devices": {}}


def summarize(blocks: list[dict]) -> dict:
    ports: list[dict] = []
    gids: list[dict] = []
    netdevs: list[dict] = []
    qos: list[dict] = []
    counters: list[dict] = []
    for b in blocks:
        tool, value = b["tool"], b["value"]
        if tool == "ibstat" and value:
            ports += _from_ibstat(b)
        elif tool == "ibstatus" and value:
            ports += _from_ibstatus(b)
        elif tool == "rdma_link" and value:
            ports += _from_rdma_link(b)
        elif tool == "ibv_devinfo" and value:
            ports += _from_devinfo(b, value)
            gids += _gids_devinfo(b, value)
        elif tool == "gid_table":
            frag = _fragment_devinfo(b)
            gids += _gids_devinfo(b, frag)
            for rec in _from_devinfo(b, frag):
                if any(rec[k] is not None for k in ("state", "active_mtu", "link_layer", "rate_gbps")):
                    rec["name"] = "?/1"
                    ports.append(rec)
        elif tool == "show_gids" and value is not None:
            gids += [_gid(b, f"{r['dev']}/{r['port']}", r["index"], r["gid"], f"v{r['version']}" if r["version"] else None,
                          r.get("ndev")) for r in value]
        elif tool == "ibdev2netdev" and value:
            netdevs += [dict(r, source=b["where"]) for r in value][:64]
        elif tool == "ethtool" and value:
            netdevs.append(dict(value, source=b["where"]))
        elif tool == "mlnx_qos" and value:
            qos.append({"iface": b.get("iface"), "trust": value.get("trust"), "pfc_enabled": value.get("pfc_enabled"),
                        "source": b["where"]})
        elif tool == "ethtool_stats" and value:
            counters.append(_counters(b, value))
    return {"ports": ports[:256], "gids": gids[:512], "netdevs": netdevs[:64], "qos": qos[:16],
            "counters": counters[:16], "fabric": fabric_of(ports, gids)}


def _counters(block: dict, stats: dict) -> dict:
    from allreduce_doctor.parsers.ethtool import loss_summary, pause_summary

    loss = {k: v for k, v in loss_summary(stats).items() if v}
    return {"iface": block.get("iface"), "nonzero_loss": loss, "pause": pause_summary(stats), "source": block["where"]}


def fabric_of(ports: list[dict], gids: list[dict]) -> str | None:
    """'ib' or 'roce' from the pasted ports' link layer, else from RoCE GID types."""
    layers = Counter(p["link_layer"] for p in ports if p["link_layer"] and p["state"] == "ACTIVE" and not p.get("layer_inferred"))
    layers = layers or Counter(p["link_layer"] for p in ports if p["link_layer"] and not p.get("layer_inferred"))
    if layers:
        top = layers.most_common(1)[0][0]
        return "ib" if top == "InfiniBand" else "roce" if top == "Ethernet" else None
    if any(g["version"] for g in gids):
        return "roce"
    return None


def down_netdevs(rdma_v: dict) -> list[dict]:
    """ibdev2netdev's `DEV port N ==> NETDEV (Down)` for ports whose own state the text does not show.
    `(Down)` is /sys/class/net/NETDEV/carrier not 1 (mlnx-tools ofed_scripts/ibdev2netdev get_link_state).
    A RoCE port follows its netdev's link (Linux drivers/infiniband/hw/mlx5/main.c mlx5_query_port_roce:
    DOWN unless the netdev is running with carrier), so there the port is down; an IPoIB netdev has no
    carrier until it joins the broadcast group (drivers/infiniband/ulp/ipoib/ipoib_multicast.c), so it can
    be Down with its port ACTIVE: the port's state (ibstat) decides, and a port the text shows is left out."""
    shown = {str(p.get("name")) for p in rdma_v.get("ports") or []}  # "mlx5_3/1"
    return [n for n in rdma_v.get("netdevs") or [] if n.get("up") is False
            and f"{n.get('device')}/{n.get('port')}" not in shown][:8]
