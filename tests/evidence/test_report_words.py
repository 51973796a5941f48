"""A report's own words (evidence/report_words.py, signatures/report_words.yaml): a report of NCCL trouble
with no NCCL output line is read, not refused; its candidates are low confidence, cite the lines they were
read from, and never outrank a candidate read from an NCCL line. The texts are written here in the shapes
reporters use (a title, a few sentences, what was tried)."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import NOTHING, EvidenceError
from allreduce_doctor.evidence.differential import COLLECT
from allreduce_doctor.evidence.report_words_table import table
from allreduce_doctor.runbook.causes import CAUSES
from tests.evidence.helpers import diagnose_json, facts

CONTAINERS = """\
NCCL error when training on two machines
We run the job in docker containers on 2 nodes. It works fine on a single node.
I tried NCCL_P2P_DISABLE=1 but it still fails.
"""
ACROSS = "the job fails across nodes, or works only on one node, one worker or one GPU"


def _evidence_reasons(data: dict) -> list[str]:
    return [i["reason"] for i in data["inconclusive"] if i["node"] == "evidence"]


def test_a_multi_node_failure_in_containers_names_the_network_candidates(tmp_path):
    rc, data, path = diagnose_json(tmp_path, CONTAINERS)
    assert rc == 3 and data["verdict"] == "inconclusive" and data["healthy"] is None
    shown = [f"from the report's words only: no NCCL output line ({ACROSS})",
             f'{path}:1: "NCCL error when training on two machines"',
             f'{path}:2: "We run the job in docker containers on 2 nodes. It works fine on a single node."']
    assert [(f["cause"], f["confidence"], f["node"], f["supporting"], f["contradicting"]) for f in data["findings"]] == [
        ("wrong_socket_ifname", "low", "evidence.report_words", shown, []),
        ("socket_blocked", "low", "evidence.report_words", shown, []),
        ("container_network_isolation", "low", "evidence.report_words", shown, []),
    ]
    assert data["findings"][2]["next_step"] == (
        "paste the container's network mode (`docker inspect -f '{{.HostConfig.NetworkMode}}'`, or the pod's "
        "hostNetwork) and `ip -br addr` inside it on two nodes")
    head = data["root_cause"]
    assert (head["id"], head["confidence"], head["node"]) == ("wrong_socket_ifname", "low", "evidence.report_words")
    assert _evidence_reasons(data) == [
        f"{path}:3: from the report's words: NCCL_P2P_DISABLE=1 did not help, which speaks against pcie_acs_enabled, "
        "iommu_enabled",
        "the report's words suggest wrong_socket_ifname but do not decide it: paste the NCCL_DEBUG=INFO "
        "NCCL_DEBUG_SUBSYS=INIT,NET output of one failing rank (its `Bootstrap : Using` and `NET/Socket : Using` "
        "lines) and `ip -br addr` of two nodes"]


def test_without_a_container_the_container_network_is_no_candidate(tmp_path):
    _rc, data, _path = diagnose_json(tmp_path, "RCCL init fails across nodes, a single node works.\n")
    assert [f["cause"] for f in data["findings"]] == ["wrong_socket_ifname", "socket_blocked"]


def test_a_setting_that_helped_is_a_candidate_and_one_that_did_not_speaks_against(tmp_path):
    text = ("nccl-tests all_reduce_perf hangs on one node with 8 GPUs\n"
            "Setting NCCL_IB_DISABLE=1 made no difference\n"
            "but it runs fine with NCCL_P2P_DISABLE=1\n")
    _rc, data, path = diagnose_json(tmp_path, text)
    helped = ["from the report's words only: no NCCL output line (NCCL_P2P_DISABLE=1 helped)",
              f'{path}:3: "but it runs fine with NCCL_P2P_DISABLE=1"']
    # ACS breaks P2P between GPUs as well as GPUDirect RDMA: sockets that did not help leave it open.
    assert [(f["cause"], f["supporting"], f["contradicting"]) for f in data["findings"]] == [
        ("pcie_acs_enabled", helped, []), ("iommu_enabled", helped, [])]
    assert _evidence_reasons(data)[0] == (
        f"{path}:2: from the report's words: NCCL_IB_DISABLE=1 did not help, which speaks against wrong_gid_index, "
        "mtu_mismatch")


def test_a_contradicted_candidate_shows_the_line_and_goes_last(tmp_path):
    text = ("NCCL fails between our 2 nodes over RoCE, one node is fine.\n"
            "disabling IB did not help.\n"
            "It works when I set NCCL_IB_GID_INDEX=3.\n")
    _rc, data, path = diagnose_json(tmp_path, text)
    assert [f["cause"] for f in data["findings"]] == ["wrong_socket_ifname", "socket_blocked", "wrong_gid_index"]
    assert data["findings"][2]["contradicting"] == [
        f'{path}:2: from the report\'s words: NCCL_IB_DISABLE=1 was tried and did not help: "disabling IB did not help."']


def test_the_outcome_may_stand_on_the_next_line(tmp_path):
    got = facts(tmp_path, "Our NCCL allreduce hangs.\nI tried NCCL_SHM_DISABLE=1.\nStill hangs.\n")
    report = got["log.job"]["report"]
    assert report["symptom"] == "hang"
    assert [(t["var"], t["value"], t["outcome"]) for t in report["tried"]] == [("NCCL_SHM_DISABLE", "1", "not_helped")]


def test_busbw_above_the_nic_rate_is_not_a_fault_and_never_healthy(tmp_path):
    text = ("all_reduce_perf on 2 nodes reports a busbw of 23 GB/s, which is higher than the 100 Gb/s NIC can carry.\n"
            "Which algorithm does NCCL use here?\n")
    rc, data, path = diagnose_json(tmp_path, text)
    assert (rc, data["verdict"], data["root_cause"], data["healthy"], data["findings"]) == (
        3, "inconclusive", None, None, [])
    assert _evidence_reasons(data) == [
        f"{path}:1: from the report's words: a busbw above the NIC's line rate is not a fault. nccl-tests computes "
        "busbw as algbw x 2(n-1)/n, the traffic a ring over all n ranks would carry (doc/PERFORMANCE.md); on two "
        "nodes NCCL's tree algorithm sends less than that over the network, so busbw can exceed the NIC rate. To "
        "measure the network, rerun all_reduce_perf with NCCL_ALGO=Ring: a ring busbw at large sizes well below "
        "the NICs' line rate is a real shortfall",
        "nothing in this text points at a cause; paste the NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET output of one "
        "failing rank, `ibstat`, `show_gids` and the all_reduce_perf table"]


def test_a_busbw_question_on_two_nodes_is_no_multi_node_failure(tmp_path):
    got = facts(tmp_path, "busbw exceeds the network bandwidth on 2 nodes: what algorithm is used?\n")
    report = got["log.job"]["report"]
    assert report["trouble"] == [] and report["busbw_above_rate"]["source"].endswith("paste.txt:1")


def test_words_say_the_gid_index_changed_as_nccl_says_it(tmp_path):
    """The words name the happening of NCCL's `GID table changed` line: its candidates (candidates.yaml)."""
    text = "On our RoCE cluster the GID index changed from 3 to 5 and the training stopped.\n"
    _rc, data, path = diagnose_json(tmp_path, text)
    assert [(f["cause"], f["supporting"]) for f in data["findings"]] == [("gid_index_drift", [
        "from the report's words only: no NCCL output line (the GID index or GID table changed under the job)",
        f'{path}:1: "On our RoCE cluster the GID index changed from 3 to 5 and the training stopped."'])]


def test_words_never_outrank_a_line_read_candidate(tmp_path):
    warn = "gpu1:2345:2400 [0] transport/net_ib/common.cc:153 NCCL WARN NET/IB : mlx5_0:1 GID table changed\n"
    _rc, alone, _ = diagnose_json(tmp_path, warn, "--symptom", "error")
    _rc, both, path = diagnose_json(tmp_path, "Our NCCL job fails between two nodes and works fine on a single node.\n"
                                    + warn, "--symptom", "error")
    assert [f["cause"] for f in alone["findings"]] == ["gid_index_drift"]
    assert [(f["cause"], f["node"], f["confidence"]) for f in both["findings"]] == [
        ("gid_index_drift", "evidence.signatures", "medium"),
        ("wrong_socket_ifname", "evidence.report_words", "low"),
        ("socket_blocked", "evidence.report_words", "low")]
    assert both["root_cause"]["id"] == "gid_index_drift"
    # with NCCL lines in the text the words are not "the only" evidence
    assert both["findings"][1]["supporting"][0] == f"from the report's words ({ACROSS})"


def test_the_symptom_from_words_only_when_none_is_given(tmp_path):
    got = facts(tmp_path, "NCCL error, then the allreduce hangs forever on 16 nodes.\n")
    report = got["log.job"]["report"]
    assert (report["symptom"], report["symptom_source"]) == ("hang", f"{tmp_path}/paste.txt:1")


def test_a_lone_nccl_beside_no_trouble_word_is_read_and_describes_no_trouble(tmp_path):
    # issue 29: no text that names NCCL is refused; it describes no trouble, so it has no report and no candidate
    text = "We upgraded NCCL last week and the new cluster looks nice.\n"
    assert "report" not in facts(tmp_path, text)["log.job"]
    rc, d, _ = diagnose_json(tmp_path, text)
    assert rc == 3 and d["findings"] == [] and d["inconclusive"][-1]["reason"] == COLLECT


@pytest.mark.parametrize("text", [
    "It works on one node but fails on two nodes.\n",  # trouble and scale, but nothing names NCCL
    "The dashboard is slow today, please check the ticket.\n",
])
def test_text_that_describes_no_nccl_trouble_is_refused_with_the_one_line(tmp_path, text):
    with pytest.raises(EvidenceError) as err:
        facts(tmp_path, text)
    assert str(err.value) == f"{tmp_path}/paste.txt: {NOTHING}"
    assert NOTHING.startswith("this text shows no NCCL output line and describes no NCCL trouble; paste ")


def test_a_healthy_nccl_log_with_a_calm_sentence_carries_no_report(tmp_path):
    text = ("NCCL works fine on our cluster, here is the init:\n"
            "node1:100:200 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n")
    assert "report" not in facts(tmp_path, text)["log.job"]


def test_every_row_names_a_cause_of_the_catalogue_with_a_basis():
    t = table()
    rows = [c for s in t.situations for c in s.candidates] + [c for r in t.tried for c in r.candidates]
    assert rows and all(c.cause in CAUSES and not CAUSES[c.cause].healthy for c in rows)
    assert all(len(c.basis) > 20 and c.next_step for c in rows)
    assert {r.var for r in t.tried} == {"NCCL_P2P_DISABLE", "NCCL_IB_DISABLE", "NCCL_SHM_DISABLE", "NCCL_SOCKET_IFNAME",
                                        "NCCL_IB_GID_INDEX", "NCCL_IB_HCA", "NCCL_CROSS_NIC"}


def test_a_hang_on_one_node_names_the_p2p_path(tmp_path):
    _rc, data, path = diagnose_json(tmp_path, "all_reduce_perf hangs on a single node with 4 GPUs, no error printed.\n")
    shown = ["from the report's words only: no NCCL output line (the job hangs on one node)",
             f'{path}:1: "all_reduce_perf hangs on a single node with 4 GPUs, no error printed."']
    assert [(f["cause"], f["supporting"]) for f in data["findings"]] == [("pcie_acs_enabled", shown),
                                                                         ("iommu_enabled", shown)]


def test_a_hang_that_a_single_node_does_not_show_is_a_multi_node_one(tmp_path):
    _rc, data, _path = diagnose_json(tmp_path, "NCCL hangs across nodes; it works on a single node.\n")
    assert [f["cause"] for f in data["findings"]] == ["wrong_socket_ifname", "socket_blocked"]


def test_slow_across_nodes_asks_which_network_nccl_chose(tmp_path):
    _rc, data, _path = diagnose_json(tmp_path, "NCCL all_reduce_perf is very slow between our two nodes.\n")
    assert [(f["cause"], f["confidence"]) for f in data["findings"]] == [("socket_fallback", "low"),
                                                                         ("gdr_disabled", "low")]
    assert data["findings"][0]["next_step"].startswith("paste NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET of one rank")


def test_a_misspelt_scale_in_the_table_is_one_clear_error(monkeypatch):
    from pathlib import Path

    from allreduce_doctor.evidence import report_words_table as report_words
    from allreduce_doctor.evidence.signatures import SignatureError

    good = report_words.load_table("report_words.yaml")[1]
    bad = {**good, "situations": {"typo": {"says": "x", "when": {"scale": ["one_nod"]}, "candidates": []}}}
    monkeypatch.setattr(report_words, "load_table", lambda name: (Path("words.yaml"), bad, False))
    report_words.table.cache_clear()
    try:
        with pytest.raises(SignatureError) as err:
            report_words.table()
        assert str(err.value) == "words.yaml:0: situations.typo: scale: each is one of one_works, one_node, multi_node"
    finally:
        monkeypatch.undo()
        report_words.table.cache_clear()


def test_a_title_without_nccl_counts_beside_the_sentence_that_names_it(tmp_path):
    got = facts(tmp_path, "Multi-node training hangs after the upgrade\nWe use NCCL 2.18 over RoCE on 2 nodes.\n")
    report = got["log.job"]["report"]
    assert [(e["source"], e["symptom"]) for e in report["trouble"]] == [(f"{tmp_path}/paste.txt:1", "hang")]


def test_trouble_words_far_from_any_nccl_word_describe_no_nccl_trouble(tmp_path):
    text = "The build fails on Monday.\nWe fixed the docs.\nWe moved the office.\nWe bumped NCCL to 2.21.\n"
    assert "report" not in facts(tmp_path, text)["log.job"]  # read (it names NCCL), yet it describes no trouble


def test_a_docstring_naming_rdma_beside_error_words_is_still_no_report(tmp_path):
    text = ('"""Status of a probe.\n\n  not_applicable  no RDMA devices on the node\n'
            "  error           non-zero exit, timeout, parse failure\n\"\"\"\n")
    with pytest.raises(EvidenceError):
        facts(tmp_path, text)
