"""smpquery portinfo (ib_portinfo) and `ethtool IF` link modes (ethtool_modes): the words back into
the masks and speeds both ends of a link are compared by (probes/derive_linkcap.py)."""

from __future__ import annotations

import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse
from tests.scenarios import nodes as N
from tests.scenarios.tools_link import local_portinfo


def test_portinfo_real_dump_gives_every_width_and_speed_mask(fixture_text):
    """ibsim switch port: 1X..2X supported (31), 4X active (2), SDR active, no extended speed."""
    info = parse("ib_portinfo", fixture_text("smpquery-portinfo-ibsim-switch-port.txt"))
    assert info == {"width_supported": 31, "width_enabled": 2, "width_active": 2, "speed_supported": 7,
                    "speed_enabled": 1, "speed_active": 1, "ext_supported": 0, "ext_enabled": 0, "ext_active": 0,
                    "ext2_supported": 0, "ext2_enabled": 0, "ext2_active": 0, "capmask": 0, "capmask2": 0,
                    "lid": 0, "local_port": 0}


def test_portinfo_of_an_ndr_port_reads_extended_speeds_and_the_capmask_before_its_flag_lines():
    info = parse("ib_portinfo", local_portinfo(N.Node("ib"), 0))
    assert (info["width_supported"], info["width_active"]) == (1 | 2 | 16, 2)  # "1X or 4X or 2X", 4X
    assert (info["ext_supported"], info["ext_active"], info["speed_active"]) == (15, 8, 0)  # FDR..NDR, NDR
    assert info["capmask"] == 0xA751E848


def test_portinfo_values_libibmad_does_not_name_are_unknown_not_zero():
    text = "# Port info: Lid 3 port 1\nLinkWidthSupported:..............undefined (64)\nLinkWidthActive:.................4X\n"
    info = parse("ib_portinfo", text)
    assert (info["width_supported"], info["width_active"]) == (None, 2)
    assert "LinkSpeedExtSupported" not in text and "ext_supported" not in info  # absent stays absent


@pytest.mark.parametrize("text", ["smpquery: iberror: failed: smp query: PortInfo\n", "# Node info\nNodeType:....Switch\n"])
def test_portinfo_refuses_what_is_not_a_portinfo_dump(text):
    with pytest.raises(ParseError):
        parse("ib_portinfo", text)


def test_ethtool_modes_real_output_with_the_partner_advertised_modes(fixture_text):
    modes = parse("ethtool_modes", fixture_text("ethtool-ifname-partner-advertised-100g.txt"))
    assert (modes["supported"], modes["advertised"], modes["partner"], modes["speed_mbps"]) == (
        [100000, 50000], [100000], [100000], 100000)


def test_ethtool_modes_without_a_partner_line_leave_the_partner_unknown(fixture_text):
    modes = parse("ethtool_modes", fixture_text("ethtool-ifname-1000baseT-softroce.txt"))
    assert (modes["supported"][0], modes["partner"], modes["speed_mbps"]) == (1000, None, 1000)


def test_ethtool_modes_not_reported_and_unknown_speed(fixture_text):
    modes = parse("ethtool_modes", fixture_text("ethtool-ifname-speed-unknown-vm.txt"))
    assert (modes["speed_mbps"], modes["partner"]) == (None, None)


def test_ethtool_modes_refuses_a_counter_dump():
    with pytest.raises(ParseError):
        parse("ethtool_modes", "NIC statistics:\n     rx_packets: 12\n")
