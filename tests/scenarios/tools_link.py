"""Scenario tool outputs of a link's two ends: PortInfo of this port and its switch port
(smpquery portinfo), the switch port's 64-bit counters (perfquery -x), and `ethtool IF`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.scenarios.tools import (
    PEER_COUNTERS,
    PEER_LID,
    _mad,
    _peer_counters,
    peer_port,
)

if TYPE_CHECKING:
    from tests.scenarios import nodes as N


# perfquery -x (perfquery.c dump_perfcounters_ext): the 64-bit data counters, then, where the
# switch port sets IsAdditionalPortCountersExtendedSupported (CapMask2 bit 1), the error counters.
_EXT_DATA = {"PortXmitData": 93_118_204_511_207, "PortRcvData": 93_021_644_938_170, "PortXmitPkts": 128_440_112_907,
             "PortRcvPkts": 128_402_771_006, "PortUnicastXmitPkts": 128_440_110_211, "PortUnicastRcvPkts": 128_402_768_113,
             "PortMulticastXmitPkts": 2_696, "PortMulticastRcvPkts": 2_893}
# The same switch port's history over its whole life, 64-bit: far past the 16-bit fields' 65535.
_EXT_HISTORY = {"SymbolErrorCounter": 81_237, "PortRcvErrors": 70_112}


def perfquery_ext(node: N.Node, i: int, later: bool) -> str:
    counters = {k: v for k, v in _peer_counters(node, i, later).items() if k not in _EXT_DATA and k != "CounterSelect2"}
    if node.peer_pinned16:
        counters.update({k: counters[k] - PEER_COUNTERS[k] + v for k, v in _EXT_HISTORY.items()})
    data = {k: v + (2_900_000_000 if later and node.traffic and "Data" in k else 0) for k, v in _EXT_DATA.items()}
    cap2 = "0x0000002" if node.peer_ext else "0x0000000"
    errors = {"CounterSelect2": "0x00000000", **counters, "QP1Dropped": 0} if node.peer_ext else {}
    return (f"# Port extended counters: Lid {PEER_LID + i} port {peer_port(i)} (CapMask: 0x5A00 CapMask2: {cap2})\n"
            + _mad({"PortSelect": peer_port(i), "CounterSelect": "0x0000", **data, **errors}))


# PortInfo of both ends (smpquery.c port_info -> dump_portinfo; libibmad/dump.c words). Widths:
# a ConnectX-7 / Quantum-2 port supports 1X, 2X and 4X ("1X or 4X or 2X"); speeds by name.
EXT_SPEED = {"FDR": (1, "14.0625 Gbps"), "EDR": (2, "25.78125 Gbps"), "HDR": (4, "53.125 Gbps"),
             "NDR": (8, "106.25 Gbps")}
HCA_SPEEDS = {"MT4123": ("FDR", "EDR", "HDR")}  # ConnectX-6; ConnectX-7 / BF-3 / their VF: FDR to NDR


def _active(node: N.Node, i: int) -> tuple[str, str]:
    """('4X', 'NDR') from the port's sysfs rate ('400 Gb/sec (4X NDR)')."""
    width, speed = node.rate.get(i, node.base_rate).split("(")[1].rstrip(")").split()
    return width, speed


def _portinfo(head: str, fields: dict) -> str:
    return head + "".join(f"{n}:{'.' * (32 - len(n))}{v}\n" for n, v in fields.items())


def _speed_fields(supported: tuple, active: str, capmask: str, lid: int, port: int) -> dict:
    ext_sup = " or ".join(EXT_SPEED[s][1] for s in ("FDR", "EDR", "HDR", "NDR") if s in supported) or "0"
    ext_act = EXT_SPEED[active][1] if active in EXT_SPEED else "No Extended Speed"
    return {"Mkey": "<not displayed>", "GidPrefix": "0xfe80000000000000", "Lid": lid, "SMLid": 1,
            "CapMask": capmask + ("\n\t\t\t\tIsTrapSupported" if capmask != "0x0" else ""), "DiagCode": "0x0000", "MkeyLeasePeriod": 0, "LocalPort": port,
            "LinkWidthEnabled": "1X or 4X or 2X", "LinkWidthSupported": "1X or 4X or 2X",
            "LinkWidthActive": None, "LinkSpeedSupported": "2.5 Gbps or 5.0 Gbps or 10.0 Gbps",
            "LinkState": "Active", "PhysLinkState": "LinkUp", "LinkDownDefState": "Polling", "ProtectBits": 0, "LMC": 0,
            "LinkSpeedActive": "Extended speed" if active in EXT_SPEED else "10.0 Gbps",
            "LinkSpeedEnabled": "2.5 Gbps or 5.0 Gbps or 10.0 Gbps", "NeighborMTU": 4096,
            "CapabilityMask2": "0x0", "LinkSpeedExtActive": ext_act, "LinkSpeedExtSupported": ext_sup,
            "LinkSpeedExtEnabled": ext_sup, "LinkSpeedExtActive2": "No Extended Speed 2",
            "LinkSpeedExtSupported2": "0", "LinkSpeedExtEnabled2": "0"}


def local_portinfo(node: N.Node, i: int) -> str:
    width, speed = _active(node, i)
    supported = node.link_speeds or HCA_SPEEDS.get(node.hca_type, ("FDR", "EDR", "HDR", "NDR"))
    fields = _speed_fields(supported, speed, "0xa751e848", 128 + i, 1)
    fields["LinkWidthActive"] = width
    return _portinfo("# Port info: DR path slid 0; dlid 0; 0 port 1\n", fields)


def peer_portinfo(node: N.Node, i: int) -> str:
    """The switch port cabled to port i; a switch's ports carry no CapMask of their own (port 0's)."""
    width, speed = _active(node, i)
    order = ("FDR", "EDR", "HDR", "NDR")
    # by default the switch is built for the speed the port runs at (it supports up to that one)
    supported = node.peer_speeds or (order[:order.index(speed) + 1] if speed in order else order)
    fields = _speed_fields(supported, speed, "0x0", 0, peer_port(i))
    fields["LinkWidthActive"] = width
    return _portinfo(f"# Port info: DR path slid 0; dlid 0; 0,1 port {peer_port(i)}\n", fields)




# `ethtool IF` as ethtool.c dump_link_usettings prints it for a ConnectX-7 port with a DAC cable
# (modes named as link_modes[] names them, one per line after the first, indented to column 32).
_ETH_MODE = {400000: "400000baseCR4/Full", 200000: "200000baseCR4/Full", 100000: "100000baseCR4/Full",
             50000: "50000baseCR2/Full", 25000: "25000baseCR/Full"}


def _modes(title: str, speeds) -> str:
    names = [_ETH_MODE[s] for s in speeds] or ["Not reported"]
    pad = " " * (len(f"        {title}:  "))
    return f"        {title}:  {names[0]}\n" + "".join(f"{pad}{n}\n" for n in names[1:])


def ethtool_link(node: N.Node, netdev: str) -> str:
    advertised = node.eth_advertised if node.eth_advertised is not None else node.eth_supported
    partner = _modes("Link partner advertised link modes", node.eth_partner) if node.eth_partner else ""
    return (f"Settings for {netdev}:\n        Supported ports: [ Backplane ]\n"
            + _modes("Supported link modes", node.eth_supported)
            + "        Supported pause frame use: Symmetric\n        Supports auto-negotiation: Yes\n"
            + "        Supported FEC modes: None        RS\n"
            + _modes("Advertised link modes", advertised)
            + "        Advertised pause frame use: No\n        Advertised auto-negotiation: Yes\n"
            + "        Advertised FEC modes: RS\n" + partner
            + f"        Speed: {node.eth_speed_mbps}Mb/s\n        Lanes: 4\n        Duplex: Full\n"
            + "        Auto-negotiation: on\n        Port: Direct Attach Copper\n        PHYAD: 0\n"
            + "        Transceiver: internal\n        Link detected: yes\n")
