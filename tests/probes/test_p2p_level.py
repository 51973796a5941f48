"""NCCL_P2P_LEVEL as NCCL reads it: src/graph/paths.cc ncclGetLevel matches the level with strcmp
(case-sensitive at v2.12.12-1, v2.21.5-1 and v2.30.7-1): "loc" is no level and P2P stays on."""

from __future__ import annotations

import pytest

from allreduce_doctor.doctor import Doctor
from allreduce_doctor.observations import Observation, Observations
from allreduce_doctor.probes.derive_env import gdr_level_forbids, p2p_forbidden, user_level
from allreduce_doctor.runbook.walk import decide


@pytest.mark.parametrize("raw, level", [("LOC", "LOC"), ("loc", None), ("Loc", None), ("PIX", "PIX"), ("pix", None),
                                        ("0", "LOC"), ("1", "PIX"), ("3", "PHB"), ("9", "SYS"), ("NVL", "NVL"),
                                        ("", None), ("x", None)])
def test_a_level_is_read_as_ncclgetlevel_reads_it(raw, level):
    assert user_level(raw) == level


@pytest.mark.parametrize("env, forbidden", [
    ({"NCCL_P2P_LEVEL": "LOC"}, True), ({"NCCL_P2P_LEVEL": "loc"}, False), ({"NCCL_P2P_LEVEL": "0"}, True),
    ({"NCCL_P2P_LEVEL": "pix"}, False), ({"NCCL_P2P_LEVEL": "SYS"}, False), ({"NCCL_P2P_DISABLE": "1"}, True),
    ({"NCCL_P2P_DISABLE": "0"}, False), ({}, False)])
def test_p2p_is_forbidden_only_where_nccl_forbids_it(env, forbidden):
    assert p2p_forbidden(env) is forbidden


def test_the_gdr_level_reads_the_same_way():
    assert gdr_level_forbids({"NCCL_NET_GDR_LEVEL": "LOC"}) == (
        "NCCL_NET_GDR_LEVEL=LOC is below PIX: NCCL disables GPUDirect RDMA for every GPU")
    assert gdr_level_forbids({"NCCL_NET_GDR_LEVEL": "loc"}) is None


@pytest.mark.parametrize("level, outcome", [("LOC", "yes"), ("loc", "no"), ("0", "yes"), ("PIX", "no")])
def test_the_trunk_step_judges_the_level_case_sensitively(level, outcome):
    facts = Observations()
    facts.add(Observation("nccl.env", {"vars": {"NCCL_P2P_LEVEL": level}, "job_found": True}))
    assert decide(Doctor.load().runbooks.node("trunk.p2p_env"), facts, {}).step.outcome == outcome


@pytest.mark.parametrize("level, hang", [("LOC", False), ("loc", True)])
def test_a_pasted_intra_node_hang_is_explained_by_loc_only_in_capitals(level, hang):
    """evidence/checks.py p2p_hang: a hang with P2P forbidden is not a P2P hang; "loc" forbids nothing."""
    from allreduce_doctor.evidence.checks import p2p_hang
    from allreduce_doctor.evidence.nccl import NcclLog

    run = {"ranks": 8, "rows": [], "completed": False, "failures": []}
    assert p2p_hang(NcclLog(), run, "intra", {"NCCL_P2P_LEVEL": level}) is hang
