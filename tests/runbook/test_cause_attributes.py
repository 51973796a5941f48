"""A cause's attributes in the catalogue (runbooks/catalogue/causes.yaml): how it shows, whether it needs
two hosts and the one paste that decides it. The loader checks them; the candidate tables take the paste."""

from __future__ import annotations

import pytest

from allreduce_doctor.errors import RunbookError
from allreduce_doctor.evidence import report_words_table, signatures
from allreduce_doctor.runbook.causes import CAUSES, parse_catalogue

CAUSE = """\
wrong_gid_index:
  title: a GID that does not route
  section: RoCE v2 branch
  severity: critical
  owner: network
  shows: [hang]
  between_hosts: true
  paste: paste `show_gids`
  summary: GIDs.
  remediation: [fix it]
  verification: [check it]
"""


def test_the_attributes_parse():
    info = parse_catalogue(CAUSE, "c.yaml")["wrong_gid_index"]
    assert (info.shows, info.between_hosts, info.paste) == (("hang",), True, "paste `show_gids`")


def test_a_cause_without_attributes_shows_nothing_and_needs_one_host():
    text = CAUSE.replace("  shows: [hang]\n  between_hosts: true\n  paste: paste `show_gids`\n", "")
    info = parse_catalogue(text, "c.yaml")["wrong_gid_index"]
    assert (info.shows, info.between_hosts, info.paste) == ((), False, "")


ERRORS = [
    ("a symptom no reporter gives", CAUSE.replace("[hang]", "[stall]"),
     "c.yaml:6:10: shows: each is one of hang, slow, crash, error, got 'stall' (at wrong_gid_index.shows)"),
    ("a symptom twice", CAUSE.replace("[hang]", "[hang, hang]"),
     "c.yaml:6:10: shows: name each symptom once (at wrong_gid_index.shows)"),
    ("between_hosts not a boolean", CAUSE.replace("between_hosts: true", "between_hosts: yes"),
     "c.yaml:7:18: between_hosts must be one of true, false, got 'yes' (at wrong_gid_index.between_hosts)"),
    ("an empty paste", CAUSE.replace("paste: paste `show_gids`", "paste: ''"),
     "c.yaml:8:10: 'paste' must not be empty (at wrong_gid_index.paste)"),
    ("a healthy outcome with a paste",
     "no_fault_found:\n  title: ok\n  section: No fault\n  healthy: true\n  summary: Fine.\n  next_steps: [x]\n"
     "  paste: y\n",
     "c.yaml:7:3: 'paste' does not belong in a healthy outcome (at no_fault_found.paste)"),
]


@pytest.mark.parametrize("text, expected", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_a_bad_attribute_is_one_located_line(text, expected):
    with pytest.raises(RunbookError) as info:
        parse_catalogue(text, "c.yaml")
    assert str(info.value) == expected


def test_the_shipped_catalogue_says_which_causes_need_two_hosts():
    # NCCL bootstrap.cc (TCP between local addresses always connects) and transport.cc (ranks of one host
    # use P2P or SHM before NET): the sockets, the container's network and libibverbs.
    assert {c for c, info in CAUSES.items() if info.between_hosts} == {
        "wrong_socket_ifname", "container_network_isolation", "socket_blocked", "container_missing_libibverbs",
        "socket_fallback"}
    assert CAUSES["pcie_acs_enabled"].shows == ("slow", "hang")


def test_a_candidate_row_without_next_step_takes_its_causes_paste():
    # retry_exceeded names wrong_gid_index first and says nothing of its own about what to paste.
    row = signatures.candidates()["retry_exceeded"][0]
    assert row.cause == "wrong_gid_index"
    assert row.next_step == CAUSES["wrong_gid_index"].paste == "paste `show_gids` of both hosts and the job's NCCL_IB_GID_INDEX"
    # a row that adds what its kind tells keeps its own (a pod's GID table starts elsewhere)
    gid_type = signatures.candidates()["gid_type_unreadable"][0]
    assert gid_type.next_step == "paste `show_gids` inside each pod or container and the job's NCCL_IB_GID_INDEX"
    shm = next(r for r in report_words_table.table().tried if r.var == "NCCL_SHM_DISABLE").candidates[0]
    assert shm.next_step == CAUSES["container_shm_too_small"].paste


def test_a_row_without_next_step_whose_cause_has_no_paste_is_refused(tmp_path):
    from pathlib import Path

    with pytest.raises(signatures.SignatureError) as info:
        signatures.next_step({"cause": "ib_congestion", "basis": "x"}, Path("candidates.yaml"), "'port_event'")
    assert "a candidate without next_step needs its cause's `paste` in the catalogue" in str(info.value)
