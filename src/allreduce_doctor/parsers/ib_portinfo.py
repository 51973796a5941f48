"""`smpquery portinfo` decoded into the link width and speed bit masks infiniband-diags compares.

smpquery.c port_info() prints PortInfo through ibdiag_common.c dump_portinfo(): every field of
IB_PORT_FIRST_F..IB_PORT_LAST_F, then CapabilityMask2 and LinkSpeedExt*, then (rdma-core >= v44)
LinkSpeedExt*2. The values are words that libibmad/dump.c writes from bit masks:
mad_dump_linkwidthsup/en ("1X or 4X or 2X", dump_linkwidth: 1X=1 4X=2 8X=4 12X=8 2X=16),
mad_dump_linkwidth (one width), mad_dump_linkspeedsup/en ("2.5 Gbps or 5.0 Gbps or 10.0 Gbps":
1/2/4), mad_dump_linkspeed ("Extended speed" = 0), dump_linkspeedext ("14.0625 Gbps or
25.78125 Gbps or 53.125 Gbps or 106.25 Gbps": FDR/EDR/HDR/NDR = 1/2/4/8; "0" when none),
mad_dump_linkspeedext ("No Extended Speed" = 0), mad_dump_linkspeedexten (30 is "Extended link
speeds disabled"), and the Ext2 fields ("212.5 Gbps" = XDR, bit 1). This parser turns the words
back into those masks, so the derivation can AND them as get_max_msg() does.
"""

from __future__ import annotations

import re

from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail
from allreduce_doctor.parsers.mad import mad_fields

WIDTH_BITS = {"1X": 1, "4X": 2, "8X": 4, "12X": 8, "2X": 16}
SPEED_BITS = {"2.5": 1, "5.0": 2, "10.0": 4}
EXT_BITS = {"14.0625": 1, "25.78125": 2, "53.125": 4, "106.25": 8}
EXT2_BITS = {"212.5": 1}
_WORD = re.compile(r"([0-9]+(?:\.[0-9]+)?X?)", re.ASCII)
# field -> (key in the result, the words' bit table)
FIELDS = {
    "LinkWidthSupported": ("width_supported", WIDTH_BITS), "LinkWidthEnabled": ("width_enabled", WIDTH_BITS),
    "LinkWidthActive": ("width_active", WIDTH_BITS),
    "LinkSpeedSupported": ("speed_supported", SPEED_BITS), "LinkSpeedEnabled": ("speed_enabled", SPEED_BITS),
    "LinkSpeedActive": ("speed_active", SPEED_BITS),
    "LinkSpeedExtSupported": ("ext_supported", EXT_BITS), "LinkSpeedExtEnabled": ("ext_enabled", EXT_BITS),
    "LinkSpeedExtActive": ("ext_active", EXT_BITS),
    "LinkSpeedExtSupported2": ("ext2_supported", EXT2_BITS), "LinkSpeedExtEnabled2": ("ext2_enabled", EXT2_BITS),
    "LinkSpeedExtActive2": ("ext2_active", EXT2_BITS),
}


def _mask(value, bits: dict[str, int]) -> int | None:
    """'1X or 4X (IBA extension)' -> 3; 'No Extended Speed', 'Extended speed', 0 -> 0; None when a
    word is not one libibmad writes (an 'undefined (N)' value)."""
    text = str(value)
    if "undefined" in text:
        return None
    if text in ("0", "No Extended Speed", "No Extended Speed 2", "Extended speed", "Extended link speeds disabled"):
        return 0
    mask = 0
    for word in _WORD.findall(text.replace(" Gbps", "")):
        if word not in bits:
            return None
        mask |= bits[word]
    return mask if mask else None


def _hex(value) -> int | None:
    """CapMask '0x2651e848' (mad_dump_portcapmask prints the flags on the lines after it)."""
    m = re.fullmatch(r"0x([0-9a-fA-F]{1,8})", str(value).strip())
    return int(m.group(1), 16) if m else None


@parser("ib_portinfo")
def parse_ib_portinfo(text: str) -> dict:
    """{'width_supported': 19, 'ext_supported': 15, ..., 'capmask': 0x2651e848, 'lid': 128,
    'local_port': 1}; a field the dump does not hold (an older smpquery) is absent."""
    fields = mad_fields(text)
    out: dict = {}
    for name, (key, bits) in FIELDS.items():
        if name in fields:
            out[key] = _mask(fields[name], bits)
    if out.get("width_supported") is None and out.get("width_active") is None:
        raise fail("smpquery portinfo (LinkWidthSupported:....1X or 4X)", text)
    out["capmask"] = _hex(fields.get("CapMask"))
    # an smpquery from before CapabilityMask2 was dumped prints no Ext2 fields either: 0 (no XDR)
    out["capmask2"] = _hex(fields.get("CapabilityMask2")) if "CapabilityMask2" in fields else 0
    for name, key in (("Lid", "lid"), ("LocalPort", "local_port")):
        if isinstance(fields.get(name), int):
            out[key] = fields[name]
    return out
