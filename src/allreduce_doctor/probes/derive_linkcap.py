"""What a link can run at, from both of its ends (review MF-14): degraded, or built for that speed.

InfiniBand, as infiniband-diags decides it for iblinkinfo and ibqueryerrors (rdma-core
infiniband-diags/ibdiag_common.c get_max_msg, libibnetdisc/ibnetdisc.c
ibnd_get_agg_linkspeedext_field): the widest width both ends support (get_max_width of
local LinkWidthSupported & remote LinkWidthSupported) and the fastest speed both support
(get_max of LinkSpeedExtSupported [| LinkSpeedExtSupported2 << 5] when both CapMasks set
IsExtendedSpeedsSupported, else of LinkSpeedSupported); a port whose active width or speed is not
that one "Could be" faster. The FDR10 branch (Mellanox vendor MAD, ConnectX-3 era) is not read.
RoCE: the fastest speed that this port advertises and its link partner advertises (`ethtool IF`);
auto-negotiation trains the highest common mode. Without the partner's modes, a port at the top
of its own supported modes runs at its own limit. The PCI-id table (domain.MODEL_MAX_GBPS) is the
last resort, and what it says is labelled as such.
"""

from __future__ import annotations

from allreduce_doctor.domain import rated_gbps
from allreduce_doctor.observations import OK, Observation
from allreduce_doctor.probes.chain import VIA

Inputs = dict[str, Observation]

HAS_EXT_SPEEDS, HAS_CAP_MASK2 = 0x4000, 0x8000  # libibmad/iba_types.h IB_PORT_CAP_HAS_EXT_SPEEDS / _CAP_MASK2
EXT_SPEEDS_2 = 0x0800  # IB_PORT_CAP2_IS_EXT_SPEEDS_2_SUPPORTED
LANES = {1: 1, 2: 4, 4: 8, 8: 12, 16: 2}  # LinkWidth bit -> lanes (1X, 4X, 8X, 12X, 2X)
WIDTH_NAME = {1: "1X", 2: "4X", 4: "8X", 8: "12X", 16: "2X"}
# Gb/s per lane as the kernel's ib_rate names them (sysfs rate "400 Gb/sec (4X NDR)")
CLASSIC = {1: (2.5, "SDR"), 2: (5.0, "DDR"), 4: (10.0, "QDR")}
EXTENDED = {1: (14.0, "FDR"), 2: (25.0, "EDR"), 4: (50.0, "HDR"), 8: (100.0, "NDR"), 32: (200.0, "XDR")}
TABLE = "the PCI-id table's rating of {hca} (last resort: one model is sold at several rates)"


def _max_width(mask: int) -> int:
    """ibdiag_common.c get_max_width(): 12X over 8X over 4X over 2X over 1X."""
    for bit in (8, 4, 2, 16):
        if mask & bit:
            return bit
    return 1


def _max_bit(mask: int) -> int:
    """ibdiag_common.c get_max(): the highest set bit."""
    return 1 << (mask.bit_length() - 1) if mask else 0


def _ext(info: dict, capmask: int | None, capmask2: int | None, field: str) -> int:
    """ibnd_get_agg_linkspeedext_field: LinkSpeedExt<field> | LinkSpeedExt<field>2 << 5 (Active:
    the Ext2 value when set, else the Ext one), 0 where the CapMask has no extended speeds."""
    if not (capmask or 0) & HAS_EXT_SPEEDS:
        return 0
    ext = info.get(f"ext_{field}") or 0
    ext2 = (info.get(f"ext2_{field}") or 0) << 5 if ((capmask or 0) & HAS_CAP_MASK2 and (capmask2 or 0) & EXT_SPEEDS_2) else 0
    return (ext2 or ext) if field == "active" else ext | ext2


def ib_link(local: dict | None, peer: dict | None) -> dict:
    """{'short': True/False/None, 'capable_gbps', 'capability': what was read and what it says}."""
    if not isinstance(local, dict) or not isinstance(peer, dict):
        return {"short": None, "capable_gbps": None, "capability": None}
    via = peer.get(VIA) or {}
    peer_cap, peer_cap2 = _int(via.get("peer_capmask")), _int(via.get("peer_capmask2"))
    lw, pw, aw = local.get("width_supported") or 0, peer.get("width_supported") or 0, local.get("width_active") or 0
    if not all(isinstance(v, int) and v for v in (lw, pw, aw)):
        return {"short": None, "capable_gbps": None, "capability": "PortInfo link widths not readable"}
    width = _max_width(lw & pw)
    le, pe = (_ext(local, local.get("capmask"), local.get("capmask2"), "supported"),
              _ext(peer, peer_cap, peer_cap2, "supported"))
    if le and pe:
        speed, table = _max_bit(le & pe), EXTENDED
        active = _ext(local, local.get("capmask"), local.get("capmask2"), "active")
    else:
        speed, table, active = _max_bit((local.get("speed_supported") or 0) & (peer.get("speed_supported") or 0)), CLASSIC, \
            local.get("speed_active") or 0
    if speed not in table:
        return {"short": None, "capable_gbps": None, "capability": "PortInfo link speeds not readable"}
    lane, name = table[speed]
    capable = LANES[width] * lane
    could = [w for w, short in ((WIDTH_NAME[width], not width & aw), (name, not speed & active)) if short]
    what = f"both ends support {WIDTH_NAME[width]} {name} ({capable:g} Gb/s; PortInfo of this port and its peer)"
    if could:
        return {"short": True, "capable_gbps": capable, "capability": f"{what}: could be {' '.join(could)}"}
    return {"short": False, "capable_gbps": capable, "capability": f"{what}: built for that speed"}


def eth_link(rec: dict | None, gbps) -> dict:
    """The same from `ethtool IF`: advertised & partner-advertised speeds, else supported ones."""
    if not isinstance(rec, dict) or rec.get("_reason") or not isinstance(gbps, (int, float)):
        return {"short": None, "capable_gbps": None, "capability": None}
    adv, partner, supported = rec.get("advertised") or [], rec.get("partner"), rec.get("supported") or []
    if adv and partner:
        common = sorted(set(adv) & set(partner), reverse=True)
        if common:
            best = common[0] / 1000
            what = f"this port and its link partner both advertise {best:g} Gb/s (ethtool)"
            return {"short": gbps < best, "capable_gbps": best,
                    "capability": f"{what}: {'could be ' + format(best, 'g') + ' Gb/s' if gbps < best else 'built for that speed'}"}
    if supported and gbps >= supported[0] / 1000:
        return {"short": False, "capable_gbps": supported[0] / 1000,
                "capability": f"at the top of the port's own supported link modes ({supported[0] / 1000:g} Gb/s, ethtool)"}
    said = "the link partner's modes are not reported" if not partner else "no advertised mode in common"
    return {"short": None, "capable_gbps": None, "capability": f"ethtool: {said}" if supported or adv else None}


def capability(p: dict, inputs: Inputs) -> dict:
    """What compute_ports adds to a port: rated_gbps (what the port reports it can do, else the
    PCI-id table's rating, labelled), link_short (True: both ends can go faster; False: built
    for that speed; None: not read) and the words saying which."""
    gbps = (p.get("rate") or {}).get("gbps")
    facts: tuple[str, ...]
    if p.get("link_layer") == "InfiniBand":
        facts, key = ("rdma.local_portinfo", "rdma.peer_portinfo"), p.get("name")
        cap = ib_link(*(_records(inputs.get(f)).get(key) for f in facts))
    else:
        facts, key = ("net.ethtool_link",), p.get("netdev")
        cap = eth_link(_records(inputs.get(facts[0])).get(key), gbps)
    if cap["capability"] is None:
        cap["capability"] = _unread(inputs, facts, key)
    table = rated_gbps(p.get("hca_type"))
    rated, rated_from = (cap["capable_gbps"], "both ends of the link") if cap["capable_gbps"] else \
        (table, TABLE.format(hca=p.get("hca_type")) if table else None)
    return {"rated_gbps": rated, "rated_from": rated_from, "link_short": cap["short"], "link_capability": cap["capability"]}


def below_capability(p: dict) -> bool | None:
    """After the peers and the declared rate: degraded when both ends can go faster, not when the
    link is built for its speed; below only the PCI-id table's rating (or nothing read) is unknown.
    A declared link_gbps that the port meets is the site's word (a switch port set to that rate)."""
    if p.get("declared_gbps"):
        return False
    if p.get("link_short") is not None:
        return p["link_short"]
    if p.get("rated_gbps") and p["rate_gbps"] < p["rated_gbps"]:
        return None
    return False


def summary(ports: list[dict]) -> str:
    """'; link rate unknown on mlx5_0/1 (200 Gb/s ...)' for the reason, when a port is not decided."""
    open_ = [p for p in ports if p.get("degraded") is None]
    if not open_:
        return ""
    p = open_[0]
    read = p.get("link_capability") or "neither end's supported link modes were read"
    return (f"; link rate of {', '.join(q['name'] for q in open_[:3])}{' and more' if len(open_) > 3 else ''} "
            f"is unknown: {p.get('rate_gbps'):g} Gb/s, below {p.get('rated_from')} ({p.get('rated_gbps')} Gb/s); {read}; "
            "declare link_gbps in site.toml to decide")


def _unread(inputs: Inputs, facts: tuple, key) -> str:
    """Why an end's supported modes are not known: the first fact or record that was not read."""
    for fact in facts:
        obs = inputs.get(fact)
        if obs is None or obs.status != OK:
            return f"{fact} is {getattr(obs, 'status', 'missing')}: {getattr(obs, 'reason', '') or 'not read'}"
        rec = _records(obs).get(key)
        if rec is None or rec.get("_reason"):
            return f"{fact} of {key} was not read: {(rec or {}).get('_reason') or 'no record'}"
    return "neither end's supported link modes could be compared"


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _records(obs: Observation | None) -> dict[str | None, dict]:
    if obs is None or obs.status != OK or not isinstance(obs.value, list):
        return {}
    return {r.get("name"): r for r in obs.value if isinstance(r, dict)}
