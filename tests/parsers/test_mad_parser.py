"""smpquery and perfquery dumps (libibmad _mad_dump_field: `Name:` dotted to 32 columns)."""

from __future__ import annotations

import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse
from tests.scenarios import tools as T

# smpquery -D nodeinfo 0,1 as smpquery.c node_info() prints it (a leaf switch seen from an HCA)
NODEINFO = """# Node info: DR path slid 0; dlid 0; 0,1
BaseVers:........................1
ClassVers:.......................1
NodeType:........................Switch
NumPorts:........................65
SystemGuid:......................0xfc6a1c0300e10004
Guid:............................0xfc6a1c0300e10004
PortGuid:........................0xfc6a1c0300e10004
PartCap:.........................32
DevId:...........................0xd2f2
Revision:........................0x000000a1
LocalPort:.......................21
VendorId:........................0x0002c9
"""


def test_nodeinfo_gives_the_peer_port_type_and_guid():
    fields = parse("mad_fields", NODEINFO)
    assert (fields["LocalPort"], fields["NodeType"], fields["Guid"]) == (21, "Switch", "0xfc6a1c0300e10004")
    assert fields["DevId"] == "0xd2f2"  # hex stays text: only unsigned decimals become ints


def test_portinfo_gives_the_lid_and_keeps_worded_values():
    fields = parse("mad_fields", T.smp_portinfo(4))
    assert (fields["Lid"], fields["LocalPort"], fields["Mkey"]) == (16, 21, "<not displayed>")
    assert fields["LinkSpeedSupported"] == "2.5 Gbps or 5.0 Gbps or 10.0 Gbps"


def test_perfquery_extended_with_error_counters_real_output(fixture_text):
    """RHEL 7.5 `perfquery -x 10 1` (CapMask2 shows the additional extended error counters)."""
    counters = parse("perfquery", fixture_text("perfquery-x-extended-zero.txt"))
    assert counters == {"symbol_error": 0, "link_error_recovery": 0, "link_downed": 0, "port_rcv_errors": 0,
                        "port_rcv_remote_physical_errors": 0, "port_rcv_switch_relay_errors": 0,
                        "port_xmit_discards": 0, "port_xmit_constraint_errors": 0,
                        "port_rcv_constraint_errors": 0, "local_link_integrity_errors": 0,
                        "excessive_buffer_overrun_errors": 0, "VL15_dropped": 0, "port_xmit_wait": 0}


def test_perfquery_port_counters_leave_out_the_32_bit_data_counters():
    counters = parse("perfquery", T.perfquery(T.N.Node("ib", peer_growth={0: {"symbol_error": 5}}), 0, later=True))
    assert counters["symbol_error"] == 8 and counters["link_downed"] == 1
    assert "port_xmit_data" not in counters and "port_rcv_packets" not in counters


def test_perfquery_without_error_counters_is_a_parse_error():
    """`perfquery -x` on a port without the additional extended counters prints data counters only
    (perfquery.c dump_perfcounters_ext): no error counter to judge."""
    text = "# Port extended counters: Lid 12 port 17 (CapMask: 0x5A00 CapMask2: 0x0000000)\nPortXmitData:....................9\n"
    with pytest.raises(ParseError, match="^expected perfquery PortCounters"):
        parse("perfquery", text)


def test_an_iberror_is_a_parse_error_not_fields():
    with pytest.raises(ParseError, match="^expected a MAD dump, not an iberror, got \"Failed to open 'mlx5_0' port '1'\""):
        parse("mad_fields", "smpquery: iberror: failed: Failed to open 'mlx5_0' port '1'\n")


def test_no_field_line_is_a_parse_error():
    with pytest.raises(ParseError, match="^expected a MAD dump"):
        parse("mad_fields", "# Node info: DR path slid 0; dlid 0; 0,1\n")
