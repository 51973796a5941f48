"""The symptom the user gives (--symptom) is the trouble of a text that names NCCL (issue 12: "the symptom
counts"; "never refuse text that has a signal"): a framework's log line that only names NCCL's all-reduce is
read alone with nothing to accuse (issue 29: no text that names NCCL is refused), and with its words as the
trouble once the user says it hangs."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import NOTHING, EvidenceError, load_evidence
from allreduce_doctor.evidence.differential import COLLECT
from tests.evidence.helpers import diagnose_json

NAMES_NCCL = ("Epoch 1/20\n"
              "INFO:tensorflow:batch_all_reduce: 2 all-reduces with algorithm = nccl, num_packs = 1\n")


def test_alone_a_line_that_only_names_nccl_is_read_with_nothing_to_accuse(tmp_path):
    # issue 29: no text that names NCCL or a collective is refused; without a symptom it describes no trouble
    rc, data, path = diagnose_json(tmp_path, NAMES_NCCL)
    assert rc == 3 and data["findings"] == [] and data["inconclusive"][-1] == {"node": "evidence", "reason": COLLECT}
    result = load_evidence([path])
    assert result.report["files"][0]["segments"] == [
        {"kind": "report_words", "lines": "2", "first": 2, "last": 2, "count": 1}]
    assert "report" not in {o.fact: o.value for o in result.observations}["log.job"]


def test_with_the_users_symptom_it_is_read_and_asks_for_the_paste_that_decides(tmp_path):
    rc, data, path = diagnose_json(tmp_path, NAMES_NCCL, "--symptom", "hang")
    assert rc == 3 and data["verdict"] == "inconclusive" and data["root_cause"] is None
    assert data["findings"] == [] and {"node": "evidence", "reason": COLLECT} in data["inconclusive"]
    result = load_evidence([path], "hang")
    assert result.report["files"][0]["segments"] == [
        {"kind": "report_words", "lines": "2", "first": 2, "last": 2, "count": 1}]
    trouble = {o.fact: o.value for o in result.observations}["log.job"]["report"]["trouble"]
    assert trouble == [{"source": f"{path}:2", "symptom": None, "quote": (
        '"INFO:tensorflow:batch_all_reduce: 2 all-reduces with algorithm = nccl, num_packs = 1"')}]


def test_the_symptom_with_the_reports_scale_names_the_multi_node_candidates(tmp_path):
    text = "We launch on 2 nodes with NCCL.\n"
    rc, data, _ = diagnose_json(tmp_path, text, "--symptom", "hang")
    assert rc == 3 and [(f["cause"], f["confidence"]) for f in data["findings"]] == [
        ("wrong_socket_ifname", "low"), ("socket_blocked", "low")]


def test_a_text_that_names_no_nccl_is_refused_whatever_the_symptom(tmp_path):
    path = tmp_path / "paste.txt"
    path.write_text("Epoch 1/20\nloss: 0.31 - accuracy: 0.90\n")
    with pytest.raises(EvidenceError) as err:
        load_evidence([str(path)], "hang")
    assert str(err.value) == f"{path}: {NOTHING}"
