"""MAD dumps of infiniband-diags: `smpquery nodeinfo|portinfo` and `perfquery` (PortCounters).

Both print one field a line as libibmad's _mad_dump_field() writes it (libibmad/fields.c):
`Name:` padded with dots to 32 columns, then the value (`LocalPort:.......................17`),
after a `# ...` header line (`# Node info: DR path slid 0; dlid 0; 0,1`, `# Port counters: Lid 12
port 17 (CapMask: 0x5A00)`: smpquery.c node_info(), perfquery.c dump_perfcounters()). A failing
tool prints `<prog>: iberror: failed: ...` on stdout (ibdiag_common.c ibexit()) and exits non-zero.
"""

from __future__ import annotations

import re

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, lines, require

_FIELD_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*):\.*(.*)$")
_UINT_RE = re.compile(r"[0-9]{1,20}", re.ASCII)
_PORT_SELECT_RE = re.compile(r"^\s*PortSelect:\.*\s*(\S+)\s*$")
_IBERROR_RE = re.compile(r"^\S+: iberror: (?:\[pid \d+\] \S+: )?failed: (.*)$")

# PortCounters fields (libibmad/fields.c, IB_PC_*) by the name of the same counter under
# /sys/class/infiniband/DEV/ports/N/counters (kernel drivers/infiniband/core/sysfs.c reads the
# same PMA attribute), so the same widths (probes/rates.py) and names (domain.IB_LINK_ERRORS) apply.
# The 32-bit PortXmitData/PortRcvData/PortXmitPkts/PortRcvPkts are left out: they saturate within
# a second at NDR (2^32 words are 17 GB) and this host's own 64-bit counters give the link's load.
PORT_COUNTERS = {
    "SymbolErrorCounter": "symbol_error",
    "LinkErrorRecoveryCounter": "link_error_recovery",
    "LinkDownedCounter": "link_downed",
    "PortRcvErrors": "port_rcv_errors",
    "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors",
    "PortRcvSwitchRelayErrors": "port_rcv_switch_relay_errors",
    "PortXmitDiscards": "port_xmit_discards",
    "PortXmitConstraintErrors": "port_xmit_constraint_errors",
    "PortRcvConstraintErrors": "port_rcv_constraint_errors",
    "LocalLinkIntegrityErrors": "local_link_integrity_errors",
    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors",
    "VL15Dropped": "VL15_dropped",
    "PortXmitWait": "port_xmit_wait",
}


def mad_fields(text: str) -> dict:
    """Every `Name:....value` line: unsigned decimals as int, the rest (hex, words) as text."""
    require(text, "a MAD dump (Name:....value lines)")
    fields: dict = {}
    for line in lines(text):
        error = _IBERROR_RE.match(line.strip())
        if error:
            raise fail("a MAD dump, not an iberror", error.group(1))
        m = _FIELD_RE.match(line.strip())
        if m is None or line.lstrip().startswith("#"):
            continue
        value = m.group(2).strip()
        fields[m.group(1)] = int(value) if _UINT_RE.fullmatch(value) else value
    if not fields:
        raise fail("a MAD dump (Name:....value lines)", text)
    return fields


@parser("mad_fields")
def parse_mad_fields(text: str) -> dict:
    """smpquery nodeinfo / portinfo: {'NodeType': 'Switch', 'LocalPort': 17, 'Lid': 12, ...}."""
    return mad_fields(text)


@parser("perfquery")
def parse_perfquery(text: str) -> dict:
    """perfquery LID PORT (PortCounters) or -x with the error counters: {sysfs counter name: int}.

    One port only: `perfquery LID 1,2` (or a range) dumps one block a port, each with its own PortSelect
    (perfquery(8) "multiple ports can be specified by either a comma separated list or a port range";
    perfquery.c dump_perfcounters() once a port). Folded into one dict the last port's values would win,
    so a dump of several ports is refused with the ports it names."""
    ports = list(dict.fromkeys(m.group(1) for m in map(_PORT_SELECT_RE.match, lines(text)) if m))
    if len(ports) > 1:
        raise ParseError(f"expected the perfquery counters of one port, got {len(ports)} ports "
                         f"(PortSelect {', '.join(ports)}): run `perfquery -x LID PORT` once a port")
    fields = mad_fields(text)
    counters = {name: fields[field] for field, name in PORT_COUNTERS.items()
                if isinstance(fields.get(field), int)}
    if "symbol_error" not in counters:
        raise fail("perfquery PortCounters (SymbolErrorCounter:....N)", text)
    return counters


@parser("perfquery_ext")
def parse_perfquery_ext(text: str) -> dict:
    """`perfquery -x`: the 64-bit error counters, which perfquery.c dump_perfcounters_ext() prints
    only where CapabilityMask2 sets IsAdditionalPortCountersExtendedSupported; without them this
    is a ParseError that says so (the 16-bit PortCounters read stays the answer)."""
    fields = mad_fields(text)
    if "SymbolErrorCounter" not in fields:
        raise fail("perfquery -x with the extended error counters (the port does not set "
                   "IsAdditionalPortCountersExtendedSupported in CapabilityMask2)", text)
    return parse_perfquery(text)
