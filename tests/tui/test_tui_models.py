"""The terminal UI's plain-data parts: badges and branches of the decision tree, re-walking after
an answer, counter rates and the two field signatures, the `watch` command on a pipe."""

from __future__ import annotations

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.tui.state import short_path
from allreduce_doctor.tui.tree_model import FAIL, NOT_REACHED, PASS, UNKNOWN, DiagnosisModel, fact_of
from allreduce_doctor.tui.watch_model import PAUSE_STORM_RATE, PortRates, Watch, fmt_rate
from tests.tui.helpers import bundle, make_session


def _model(name: str, *extra: str):
    session = make_session(bundle(name), *extra)
    data = session.diagnose().to_dict()
    return session, data, DiagnosisModel(session.doctor.runbooks, data, session.options.answers)


def test_badges_on_a_fault():
    _, data, model = _model("roce-pfc-off")
    assert model.status("trunk.rdma_present") == PASS
    assert model.status("roce.pfc") == FAIL  # its outcome leads to the root cause
    assert model.status("roce.pfc_off") == FAIL  # the leaf the walk stopped at
    assert model.status("roce.traffic_class") == NOT_REACHED
    assert model.leaf == "roce.pfc_off"
    assert model.focus_key() == "roce.pfc"
    assert [g[0] for g in model.groups()] == ["trunk", "roce"]
    assert model.groups()[1][2][-2:] == ["roce.pfc", "roce.pfc_off"]
    assert [(b.label, b.target, b.taken) for b in model.branches("roce.pfc")] == [
        ("yes", "roce.pfc_off", True), ("no", "roce.traffic_class", False), ("unknown", "roce.traffic_class", False)]
    assert data["context"]["bundle"] == bundle("roce-pfc-off")


def test_node_view_carries_why_evidence_and_meaning():
    _, _, model = _model("roce-pfc-off")
    view = model.view("roce.pfc")
    assert view.title == "PFC is enabled on some priority"
    assert view.why.startswith("Without PFC a RoCE fabric is lossy")
    assert (view.outcome, view.means) == ("yes", "PFC is enabled on no priority at all")
    assert [(r["fact"], r["status"], r["expected"]) for r in view.evidence] == [
        ("roce.priority", "ok", 'PFC enabled on the RoCE priority (commonly 3), unless the site declares the fabric lossy (roce_mode = "lossy")')]
    assert model.fact_refs("roce.pfc") == ["roce.priority"]
    unreached = model.view("roce.traffic_class")
    assert (unreached.status, unreached.outcome, unreached.evidence) == (NOT_REACHED, None, [])


def test_secondary_finding_off_the_path_is_failed_and_listed():
    _, data, model = _model("multi-ib-disabled-ecn-off")
    assert data["root_cause"]["id"] == "ib_disabled_by_env"
    assert model.secondary() == ["roce.ecn_seen"]  # the settings' check, confirmed by the window's bytes
    assert model.status("roce.ecn_seen") == FAIL
    view = model.view("roce.ecn_seen")
    assert view.secondary and view.outcome == "yes"


def test_unanswered_question_is_unknown_and_an_answer_walks_on():
    session, data, model = _model("ib-healthy")
    assert model.status("ib.scale") == UNKNOWN
    assert model.first_unanswered() == model.focus_key() == "ib.scale"
    answered = session.reanswer({"validated_scale": "two_nodes"}).to_dict()
    assert answered["healthy"]["node"] == "ib.validate_at_scale"
    assert answered["unanswered"] == []
    assert session.observations.get("operator.answers").value == {"validated_scale": "two_nodes"}
    again = DiagnosisModel(session.doctor.runbooks, answered, session.options.answers)
    assert again.status("ib.scale") == PASS and again.view("ib.scale").answered == "two_nodes"
    skipped = session.reanswer({}).to_dict()
    assert skipped["healthy"]["node"] == "ib.healthy" and skipped["unanswered"][0]["node"] == "ib.scale"


def test_reanswer_recomputes_facts_derived_from_answers():
    session, _, _ = _model("ib-healthy")
    before = session.observations.get("node.busbw").value
    session.reanswer({"measured_busbw": "380"})
    after = session.observations.get("node.busbw").value
    assert before.get("measured_gbs") is None and after["measured_gbs"] == 380


def test_fact_of_finds_the_longest_observed_prefix():
    known = {"nccl.env", "roce.priority", "log.nccl"}
    assert fact_of("nccl.env.vars.NCCL_IB_HCA", known) == "nccl.env"
    assert fact_of("exists(log.nccl)", known) == "log.nccl"
    assert fact_of("roce.counters", known) is None


def test_short_path_keeps_the_last_two_components():
    assert short_path("tests/fixtures/scenarios/roce-pfc-off/bundle.tar.gz") == ".../roce-pfc-off/bundle.tar.gz"
    assert short_path("node.tar.gz") == "node.tar.gz"


def _port(**rates):
    base = {m: 0.0 for m in ("throughput", "pause", "pause_duration", "cnp", "ecn", "out_of_sequence",
                             "retrans", "discards", "xmit_wait", "symbol_errors")}
    return PortRates("mlx5_0/1", "enp26s0np0", "Ethernet", {**base, **rates})


def test_loss_signature_names_the_counters_and_a_throughput_collapse():
    watch = Watch()
    watch.add([_port(throughput=380.0)])
    watch.add([_port(throughput=90.0, out_of_sequence=4800.0, retrans=320.0)])
    assert [s.text for s in watch.signatures()] == [
        "LOSS on enp26s0np0: retransmission counters climbing (OOS 4.8k/s, retrans 320/s); "
        "throughput collapsing (90.0 of 380.0 Gb/s peak)"]


def test_pause_cascade_needs_pause_without_loss():
    watch = Watch()
    watch.add([_port(pause=PAUSE_STORM_RATE + 1)])
    assert [s.kind for s in watch.signatures()] == ["pause_cascade"]
    watch.add([_port(pause=PAUSE_STORM_RATE + 1, discards=5.0)])
    assert [s.kind for s in watch.signatures()] == ["loss"]


def test_pause_rising_three_samples_is_a_cascade_below_the_threshold():
    watch = Watch()
    for rate in (100.0, 2000.0):
        watch.add([_port(pause=rate)])
        assert watch.signatures() == []
    watch.add([_port(pause=9000.0)])
    assert [s.text for s in watch.signatures()] == [
        "PAUSE CASCADE on enp26s0np0: 9.0k pause frames/s (rising) while nothing drops"]


@pytest.mark.parametrize(("value", "text"), [(None, "-"), (0, "0"), (7, "7"), (2.5, "2.5"), (41000, "41.0k"), (830200, "830.2k"), (3.2e9, "3.2G")])
def test_fmt_rate(value, text):
    assert fmt_rate(value) == text


def test_watch_command_on_a_pipe_prints_one_interval(capsys):
    assert main(["watch", "--snapshot", bundle("roce-pause-storm")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("allreduce-doctor watch | gpu-node-017 (bundle .../roce-pause-storm/bundle.tar.gz) "
                      "| 1 recorded interval | rates per second over 1s")
    assert out[2].split() == ["PORT", "NETDEV", "tx", "Gb/s", "pause/s", "pause", "us/s", "CNP/s", "ECN/s", "OOS/s",
                              "retrans/s", "discard/s", "xmit_wait/s", "sym", "err/s"]
    assert len(out) == 3 + 8 + 2
    assert out[-1] == "PAUSE CASCADE on enp26s0np0 (+7 more ports): 830.2k pause frames/s (pause-storm events) while nothing drops"


def test_watch_command_errors_are_one_line(capsys):
    assert main(["watch", "--interval", "0"]) == 2
    assert capsys.readouterr().err == "allreduce-doctor: error: --interval 0: expected 0.1 to 600 seconds\n"
    assert main(["watch", "--snapshot", "no/such.tar.gz"]) == 2
    assert capsys.readouterr().err.startswith("allreduce-doctor: error: no/such.tar.gz: ")


def test_no_rdma_port_says_so():
    from allreduce_doctor.tui.watch_model import NO_PORTS, render_text

    assert render_text(Watch(), "header").splitlines() == [
        "header", "", f"{'PORT':<10} {'NETDEV':<12} " + " ".join(f"{label:>11}" for label in (
            "tx Gb/s", "pause/s", "pause us/s", "CNP/s", "ECN/s", "OOS/s", "retrans/s", "discard/s", "xmit_wait/s", "sym err/s")),
        "", NO_PORTS]
