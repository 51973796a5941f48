"""--format prometheus: parsed by prometheus_client's own parser for every scenario; the textfile."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from allreduce_doctor.doctor import Doctor
from allreduce_doctor.errors import DoctorError
from allreduce_doctor.hosts.snapshot import SnapshotHost
from allreduce_doctor.metrics.port_counters import COUNTER_METRICS, port_counters
from allreduce_doctor.metrics.port_rates import PORT_METRICS, attach_run
from allreduce_doctor.metrics.prometheus import render_prometheus, write_textfile
from allreduce_doctor.session import Options, Session
from tests.healthcheck.conftest import EXAMPLES, SCENARIOS, bundle, doctor

NAMES = sorted(p.parent.name for p in SCENARIOS.glob("*/bundle.tar.gz"))


def metrics(name: str) -> tuple[dict, dict]:
    session = Session(Doctor.load(), SnapshotHost(bundle(name)), Options(interval=0))
    data = attach_run(session.diagnose().to_dict(), session.observations, 0.0)
    families = {f.name: f for f in text_string_to_metric_families(render_prometheus(data))}
    return data, families


def series(family) -> dict[tuple, float]:
    return {tuple(sorted(s.labels.items())): s.value for s in family.samples}


@pytest.mark.parametrize("name", NAMES)
def test_every_scenario_parses_with_the_real_parser(name):
    data, families = metrics(name)
    verdict = series(families["allreduce_doctor_verdict"])
    assert verdict == {(("verdict", v),): (1.0 if v == data["verdict"] else 0.0) for v in ("fault", "healthy", "inconclusive", "not_applicable")}
    causes = {dict(k)["cause"] for k in series(families["allreduce_doctor_cause"])} if data["findings"] else set()
    assert causes == {f["cause"] for f in data["findings"]}
    checks = series(families["allreduce_doctor_check"])
    skipped = set(data.get("skipped_checks") or [])
    on_path = {s["node"]: "skipped" if s["node"] in skipped else s["outcome"] for s in data["path"] if s["kind"] == "check"}
    # a state set: every outcome of every check is a series, exactly the current one is 1
    assert checks == {(("check", c), ("outcome", o)): float(o == current)
                      for c, current in on_path.items() for o in ("yes", "no", "unknown", "skipped")}
    counters = {name.removesuffix("_total") for name in COUNTER_METRICS}
    assert {f.name for f in families.values() if f.type == "counter"} <= counters
    assert all(f.type == "gauge" for f in families.values() if f.name not in counters)
    assert all(s.name.endswith("_total") for f in families.values() if f.type == "counter" for s in f.samples)
    assert set(families) <= {"allreduce_doctor_verdict", "allreduce_doctor_cause", "allreduce_doctor_check",
                             *PORT_METRICS, *counters, "allreduce_doctor_last_run_timestamp_seconds",
                             "allreduce_doctor_run_duration_seconds"}


def test_pause_storm_rates_per_port_priority_and_direction():
    _, families = metrics("roce-pause-storm")
    frames = series(families["allreduce_doctor_port_pause_frames_per_second"])
    key = (("device", "mlx5_4"), ("direction", "rx"), ("port", "1"), ("priority", "3"))
    assert frames[key] == 450120.0
    assert frames[key[:1] + (("direction", "tx"),) + key[2:]] == 380120.0
    assert len(frames) == 8 * 8 * 2  # 8 ports x 8 priorities x rx/tx, each observed
    cnp = series(families["allreduce_doctor_port_cnp_per_second"])
    assert cnp[(("device", "mlx5_0"), ("direction", "tx"), ("port", "1"))] == 40.0


def test_ib_has_no_roce_series_and_keeps_xmit_wait():
    _, families = metrics("ib-congestion")
    assert "allreduce_doctor_port_cnp_per_second" not in families  # absent, never 0
    assert "allreduce_doctor_port_pause_frames_per_second" not in families
    wait = series(families["allreduce_doctor_port_xmit_wait_ticks_per_second"])
    assert wait[(("device", "mlx5_0"), ("port", "1"))] == 1200041000.0
    loss = series(families["allreduce_doctor_port_loss_events_per_second"])
    assert {dict(k)["layer"] for k in loss} == {"ib"}


def test_a_missing_counter_is_absent_not_zero():
    from allreduce_doctor.metrics.port_rates import port_rates
    from allreduce_doctor.observations import OK, Observation, Observations

    obs = Observations()
    obs.add(Observation("net.ethtool_stats", [{"device": "mlx5_0", "port": "1", "name": "eth0",
                                                "rate": {"rx_prio3_pause": 7.0, "tx_prio3_pause": None}}], OK))
    obs.add(Observation("rdma.hw_counters", [{"device": "mlx5_0", "port": "1", "_status": "error"}], OK))
    assert port_rates(obs) == [{"metric": "allreduce_doctor_port_pause_frames_per_second", "value": 7.0,
                                "labels": {"device": "mlx5_0", "port": "1", "priority": "3", "direction": "rx"}}]


def test_raw_counters_are_totals_beside_the_rates():
    _, families = metrics("roce-pause-storm")
    frames = series(families["allreduce_doctor_port_pause_frames"])  # the parser names the family without _total
    key = (("device", "mlx5_0"), ("direction", "rx"), ("port", "1"), ("priority", "3"))
    assert frames[key] == 2252351.0  # ethtool -S rx_prio3_pause, the counter itself
    assert len(frames) == 8 * 8 * 2
    # rx_prio3_pause_duration 90561550 microseconds, in seconds (the base unit)
    assert series(families["allreduce_doctor_port_pause_duration_seconds"])[key] == 90.56155
    cnp = series(families["allreduce_doctor_port_cnp"])
    assert cnp[(("device", "mlx5_0"), ("direction", "tx"), ("port", "1"))] == 18273.0  # np_cnp_sent
    loss = series(families["allreduce_doctor_port_rdma_loss"])
    assert {dict(k)["counter"] for k in loss} == {"out_of_sequence", "packet_seq_err", "local_ack_timeout_err",
                                                 "roce_adp_retrans", "duplicate_request", "implied_nak_seq_err"}
    _, ib = metrics("ib-congestion")
    assert series(ib["allreduce_doctor_port_xmit_wait_ticks"])[(("device", "mlx5_0"), ("port", "1"))] == 3689644687.0
    assert "allreduce_doctor_port_cnp" not in ib  # absent, never 0


def test_a_saturated_or_absent_counter_is_not_exported():
    from allreduce_doctor.observations import OK, Observation, Observations

    obs = Observations()
    obs.add(Observation("rdma.counters", [{"device": "mlx5_0", "port": "1", "saturated": ["port_xmit_wait"],
                                           "values": {"port_xmit_wait": 4294967295, "port_xmit_discards": 3}},
                                          {"device": "mlx5_1", "port": "1", "absent": ["port_xmit_discards"],
                                           "values": {"port_xmit_wait": 12, "port_xmit_discards": 0}}], OK))
    assert port_counters(obs) == [
        {"metric": "allreduce_doctor_port_xmit_discards_total", "value": 3.0, "labels": {"device": "mlx5_0", "port": "1"}},
        {"metric": "allreduce_doctor_port_xmit_wait_ticks_total", "value": 12.0, "labels": {"device": "mlx5_1", "port": "1"}}]


def test_label_values_are_escaped():
    data = {"verdict": "fault", "findings": [{"cause": 'a"b\\c\nd', "severity": "critical", "owner": "network"}]}
    family = next(f for f in text_string_to_metric_families(render_prometheus(data)) if f.name == "allreduce_doctor_cause")
    assert family.samples[0].labels["cause"] == 'a"b\\c\nd'


def test_diagnose_format_prometheus_cli():
    proc = doctor("diagnose", "--snapshot", str(EXAMPLES / "roce-pfc-off.tar.gz"), "--format", "prometheus")
    families = {f.name: f for f in text_string_to_metric_families(proc.stdout)}
    assert (proc.returncode, proc.stderr) == (1, "")
    assert series(families["allreduce_doctor_cause"]) == {
        (("cause", "pfc_not_enabled"), ("owner", "network"), ("severity", "critical")): 1.0}
    assert families["allreduce_doctor_run_duration_seconds"].samples[0].value > 0


def test_healthcheck_textfile_is_written_whole(tmp_path):
    target = tmp_path / "allreduce_doctor.prom"
    proc = doctor("healthcheck", "--snapshot", str(EXAMPLES / "roce-pfc-off.tar.gz"), "--textfile", str(target))
    assert proc.returncode == 1 and proc.stdout.startswith("ERROR: allreduce-doctor: pfc_not_enabled")
    families = {f.name: f for f in text_string_to_metric_families(target.read_text())}
    assert series(families["allreduce_doctor_verdict"])[(("verdict", "fault"),)] == 1.0
    skipped = {dict(k)["check"] for k, v in series(families["allreduce_doctor_check"]).items()
               if dict(k)["outcome"] == "skipped" and v == 1}
    assert skipped == {"roce.phy_errors"}  # the one counter check on the path before the PFC fault
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert os.listdir(tmp_path) == ["allreduce_doctor.prom"]  # no temporary file left behind


def test_textfile_replaces_a_link_and_never_writes_through_it(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    target = tmp_path / "m.prom"
    target.symlink_to(victim)
    write_textfile(str(target), "allreduce_doctor_verdict{verdict=\"fault\"} 1\n")
    assert victim.read_text() == "keep me\n"
    assert not target.is_symlink() and target.read_text().startswith("allreduce_doctor_verdict")


def test_textfile_errors_are_one_line(tmp_path):
    with pytest.raises(DoctorError) as err:
        write_textfile(str(tmp_path / "missing" / "m.prom"), "")
    assert str(err.value) == f"--textfile {tmp_path}/missing/m.prom: cannot write in {tmp_path}/missing: No such file or directory"
    (tmp_path / "d.prom").mkdir()
    with pytest.raises(DoctorError) as err:
        write_textfile(str(tmp_path / "d.prom"), "")
    assert str(err.value) == (f"--textfile {tmp_path}/d.prom: is a directory; name the file, "
                              f"e.g. {tmp_path}/d.prom/allreduce_doctor.prom")
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == ["d.prom"]
