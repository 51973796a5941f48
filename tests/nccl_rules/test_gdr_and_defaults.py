"""NCCL_NET_GDR_LEVEL, NCCL_P2P_*, NCCL_IB_TIMEOUT and GID routing as nccl_rules reads them, at the
version boundaries read in NVIDIA/nccl (graph/topo.cc topoPathTypeStr, graph/paths.cc ncclGetLevel and
ncclTopoCheckGdr, transport/net_ib NCCL_PARAM lines)."""

from __future__ import annotations

import pytest

from allreduce_doctor.nccl_rules import defaults, gdr
from allreduce_doctor.nccl_rules.gid import gid_routable


@pytest.mark.parametrize("raw, version, level", [
    ("PIX", "2.21.5", "PIX"), ("pix", "2.21.5", None), ("loc", None, None), ("NVL", "2.12.12", "NVL"),
    ("C2C", "2.25.1", None), ("C2C", "2.26.2", "C2C"), ("P2C", "2.27.2", None), ("P2C", "2.27.3", "P2C"),
    ("NET", "2.30.7", None), ("0", "2.21.5", "LOC"), ("2", "2.21.5", "PXB"), ("9", "2.21.5", "SYS"),
    ("0x1", "2.21.5", "PIX"), ("", "2.21.5", None), (" 1", "2.21.5", None),
])
def test_levels_as_ncclgetlevel_reads_them(raw, version, level):
    """strcmp against topoPathTypeStr[0..PATH_SYS]; else a first character that is a digit, read with
    strtol base 0 (0x1 is 1: levelsOldToNew[1] is PIX), capped at 5 (SYS)."""
    assert gdr.user_level(raw, version) == level


def test_path_order_moves_p2c_before_pxn_at_2_27_5():
    assert gdr.path_types("2.27.3").index("P2C") > gdr.path_types("2.27.3").index("PXN")
    assert gdr.path_types("2.27.5").index("P2C") < gdr.path_types("2.27.5").index("PXN")
    assert "C2C" not in gdr.path_types("2.25.1")


@pytest.mark.parametrize("raw, path, bcm, on", [
    (None, "PIX", None, True), (None, "PXB", None, True), (None, "NODE", None, False), (None, "SYS", None, False),
    ("PIX", "PXB", False, False),   # MF-13: PIX on a PXB layout
    ("PIX", "PXB", True, None),     # a Broadcom PEX switch NCCL flattens: PIX to NCCL, cannot tell
    ("PIX", "PXB", None, None), ("PHB", "NODE", None, True), ("SYS", "SYS", None, True), ("loc", "PIX", None, True),
])
def test_gdr_on_a_pcie_path(raw, path, bcm, on):
    assert gdr.gdr_on_path(raw, path, "2.21.5", bcm=bcm) is on


@pytest.mark.parametrize("raw, version, c2c, on", [
    (None, "2.29.2", True, True), ("PXB", "2.29.2", True, False), ("P2C", "2.29.2", True, True),
    ("PXB", "2.28.9", True, True), ("PXB", "2.28.9", False, False), (None, "2.28.9", False, False),
    ("PXB", "2.26.2", True, None), ("SYS", "2.30.7", True, True), ("NVB", "2.28.9", True, False),
])
def test_gdr_on_grace(raw, version, c2c, on):
    """2.27-2.28: NET_GDR_C2C rewrites P2C to C2C, default level PXB; 2.29.2 on: default P2C, a user
    level replaces it (paths.cc)."""
    assert gdr.gdr_on_path(raw, "SYS", version, grace=True, c2c=c2c) is on


@pytest.mark.parametrize("env, forbidden", [
    ({"NCCL_P2P_DISABLE": "1"}, True), ({"NCCL_P2P_DISABLE": "0x1"}, True), ({"NCCL_P2P_DISABLE": " 1"}, True),
    ({"NCCL_P2P_LEVEL": "LOC"}, True), ({"NCCL_P2P_LEVEL": "loc"}, False), ({"NCCL_P2P_LEVEL": "0"}, True), ({}, False),
])
def test_p2p_forbidden(env, forbidden):
    assert gdr.p2p_forbidden(env) is forbidden


@pytest.mark.parametrize("raw, version, fault", [
    ("17", "2.21.5", True), ("18", "2.21.5", False), ("18", "2.23.4", False), ("19", "2.23.4", False),
    ("17", "2.23.4", True), ("13", "2.13.4", True), ("14", "2.13.4", False), ("17", None, None), ("13", None, True),
    ("0", "2.23.4", False), ("32", "2.23.4", False), ("0x12", "2.23.4", False), ("022", "2.23.4", False),
    ("", "2.23.4", False), ("abc", "2.23.4", False),
])
def test_ib_timeout_verdicts(raw, version, fault):
    """0x12 = 18 and 022 = 18 (strtoll base 0); 'abc' reads as 0, an infinite timeout (param.cc)."""
    assert defaults.ib_timeout_verdict(raw, version)[0] is fault


@pytest.mark.parametrize("kind, version, routes", [
    ("ipv4", 2, True), ("global", 2, True), ("ipv4", 1, False), ("link_local", 2, False), ("empty", None, False),
    ("ipv4", None, None), (None, 2, None),
])
def test_gid_routable(kind, version, routes):
    assert gid_routable(kind, version) is routes


@pytest.mark.parametrize("raw, version, level", [("NVB", "2.7.8", None), ("NVB", "2.8.3", "NVB"),
                                                 ("PXN", "2.11.4", None), ("PXN", "2.12.7", "PXN")])
def test_older_tags_know_fewer_names(raw, version, level):
    assert gdr.user_level(raw, version) == level
