"""A real validate run on the fakes: fake srun and nccl-tests, FakeHosts per node whose counters
move as each scenario says. Each run gives the expected Diagnosis, and its record replays to the
same Diagnosis through `diagnose --snapshot DIR` and `fleet --snapshots DIR`."""

from __future__ import annotations

import json

import pytest

from allreduce_doctor.cli import build_parser, main
from allreduce_doctor.validate.counter_rounds import HostSampler
from allreduce_doctor.validate.run import plan_from_args, run_validate
from tests.validate import fakes
from tests.validate.harness import cause, run_scenario
from tests.validate.scenarios import DROPPED, NODES, SCENARIOS

pytestmark = pytest.mark.slow  # real-time runs: each waits on validate's counter intervals (6-9 s a test)


def replayed(capsys, *argv):
    main(list(argv))
    return json.loads(capsys.readouterr().out)


def test_lossy_roce_names_the_lossy_nodes(tmp_path, monkeypatch, capsys):
    data, root = run_scenario("lossy", tmp_path, monkeypatch)
    assert data["verdict"] == "fault" and cause(data) == "roce_packet_loss"
    assert data["findings"][0]["value"] == {"nodes": ["gpu02", "gpu03"],
                                            "ports": {"gpu02": ["enp77s0np0"], "gpu03": ["enp187s0np0"]}}
    rows = [e for e in data["evidence"] if e["node"] == "validate.loss"]
    assert [r["observed"]["node"] for r in rows] == ["gpu02", "gpu03"]
    assert rows[0]["observed"]["share"] == "2 of 2 rounds under load"
    assert replayed(capsys, "diagnose", "--snapshot", str(root), "--format", "json") == data
    assert replayed(capsys, "fleet", "--snapshots", str(root), "--format", "json") == data


def test_pause_cascade_names_the_slow_receiver(tmp_path, monkeypatch):
    data, _ = run_scenario("pause_cascade", tmp_path, monkeypatch)
    assert cause(data) == "pfc_pause_storm"
    assert data["findings"][0]["value"] == {"nodes": NODES, "root": "gpu03"}
    rows = [(e["fact"], e["observed"]["node"], e["observed"].get("pause_tx_fraction", e["observed"].get("pause_rx_fraction")))
            for e in data["evidence"] if e["node"] == "validate.pause"]
    assert rows == [("roce.pause_storm", "gpu03", 0.23), ("roce.pause_rx", "gpu01", 0.19), ("roce.pause_rx", "gpu02", 0.18),
                    ("roce.pause_rx", "gpu04", 0.2)]  # the root transmits pause, its victims receive it
    assert data["root_cause"]["summary"].endswith("The root is most likely gpu03: it pauses its peers the most "
                                                  "(transmit pause 23.0% of the time).")


def test_healthy_dcqcn_is_congestion_not_loss(tmp_path, monkeypatch):
    data, _ = run_scenario("dcqcn", tmp_path, monkeypatch, "--incast", "gpu01")
    assert [f["cause"] for f in data["findings"]] == ["roce_congestion"]
    incast = [(e["fact"], e["observed"]) for e in data["evidence"] if e["fact"].startswith("incast")]
    assert incast == [("incast to gpu01", {"average_gbits": 97.48})] * 3  # gpu02..gpu04 -> gpu01, side by side
    assert [s["name"] for s in data["validate"]["steps"]] == ["all_reduce_perf"] + ["incast"] * 6
    assert data["findings"][0]["severity"] == "minor"
    assert next(p for p in data["path"] if p["node"] == "validate.loss")["outcome"] == "no"


def test_ib_credit_backpressure(tmp_path, monkeypatch):
    data, _ = run_scenario("ib_backpressure", tmp_path, monkeypatch)
    assert [f["cause"] for f in data["findings"]] == ["ib_congestion"]
    assert data["findings"][0]["value"] == {"nodes": NODES}
    assert data["context"]["fabric"] == "ib"


def test_at_the_hardware_limit_is_healthy(tmp_path, monkeypatch, capsys):
    data, root = run_scenario("at_limit", tmp_path, monkeypatch, "--launcher", "srun --ntasks-per-node={ranks_per_node}")
    assert data["validate"]["steps"][0]["argv"][:2] == ["srun", "--ntasks-per-node=8"]  # the template, filled
    assert data["verdict"] == "healthy" and data["healthy"]["id"] == "expected_hardware_limit"
    busbw = next(p for p in data["path"] if p["node"] == "validate.busbw")
    assert busbw["value"]["all_reduce_perf"] == {
        "peak_busbw_gbs": 371.82, "expected_gbs": 400.0, "ratio": 0.93, "verdict": "at_limit", "ceiling_gbs": 400.0,
        "hardware": "at_limit", "hardware_note": "NICs: 371.82 of about 400 GB/s across 4 nodes (8 NICs per node x 400 "
                                                 "Gb/s each (50 GB/s)): at the hardware's limit, not a fault"}
    assert busbw["means"].startswith("at_limit: peak 371.82 GB/s against 8 NICs per node x 400 Gb/s / 8 = 400 GB/s")
    assert replayed(capsys, "fleet", "--snapshots", str(root), "--format", "json") == data


def test_one_straggler_node(tmp_path, monkeypatch):
    data, _ = run_scenario("straggler", tmp_path, monkeypatch)
    assert cause(data) == "straggler_node"
    assert data["findings"][0]["value"] == {"nodes": ["gpu04"]}
    row = next(e for e in data["evidence"] if e["node"] == "validate.stragglers")
    assert row["observed"] == {"node": "gpu04", "counter": "link_rate_gbps", "rate": 200.0}


def test_a_launcher_that_fails_is_inconclusive_with_its_words(tmp_path, monkeypatch):
    data, root = run_scenario("launcher_fails", tmp_path, monkeypatch)
    assert data["verdict"] == "inconclusive"
    assert {"node": "validate.launch", "reason": "all_reduce_perf: exit 1"} in data["inconclusive"]
    assert "Requested node configuration is not available" in (root / "steps" / "00-all_reduce_perf.out").read_text()


def test_a_launcher_that_hangs_is_stopped_at_the_cap(tmp_path, monkeypatch):
    data, _ = run_scenario("launcher_hangs", tmp_path, monkeypatch, max_seconds=3)
    assert data["verdict"] == "inconclusive"
    assert {"node": "validate.launch", "reason": "all_reduce_perf: stopped at the wall-clock cap"} in data["inconclusive"]
    assert data["validate"]["steps"][0]["timed_out"] is True and data["validate"]["steps"][0]["seconds"] < 6


def test_a_node_that_drops_out_mid_run(tmp_path, monkeypatch):
    data, _ = run_scenario("node_drops_out", tmp_path, monkeypatch)
    assert data["verdict"] == "inconclusive"
    assert data["inconclusive"] == [{"node": "validate.watch", "reason": f"gpu04: gave no sample from round 2 on ({DROPPED})"}]


def test_busy_nodes_are_refused(tmp_path, monkeypatch):
    from allreduce_doctor.errors import DoctorError
    from tests.scenarios import nodes as N
    from tests.scenarios.build import fake_host

    bindir = fakes.install(tmp_path / "bin", {"busbw": 1.0})
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    args = build_parser().parse_args(["validate", "--nodes", "gpu[01-02]", "--nccl-tests", str(bindir), "--yes"])
    make_plan, _ = plan_from_args(args)
    sampler = HostSampler(lambda i, s: {"gpu01": fake_host(N.Node("roce")), "gpu02": fake_host(N.Node("roce", job=False))}, 1.0)
    with pytest.raises(DoctorError) as err:
        run_validate(make_plan, sampler, tmp_path, False, 0.5)
    assert str(err.value) == ("gpu01 already runs an NCCL job: validate would disturb it and be disturbed by it; "
                              "drain the nodes, or give --allow-busy")


def test_ctrl_c_kills_the_launcher_and_keeps_the_record(tmp_path, monkeypatch):
    import os
    import signal

    from allreduce_doctor.validate.record import load_record

    def press_ctrl_c(index, step):
        if index == 2:  # the benchmark hangs under watch: the user presses Ctrl-C
            os.kill(os.getpid(), signal.SIGINT)
        return SCENARIOS["launcher_hangs"].hosts_for(index, step)

    with pytest.raises(KeyboardInterrupt):
        run_scenario("launcher_hangs", tmp_path, monkeypatch, hosts_for=press_ctrl_c)
    record = load_record(tmp_path / "record")
    assert record["interrupted"] is True and record["steps"] == []
    assert [r["step"] for r in record["rounds"]] == [None, "all_reduce_perf", "all_reduce_perf"]
    fakes_running = [pid for pid in os.listdir("/proc") if pid.isdigit() and _runs_from(pid, tmp_path / "bin")]
    assert fakes_running == []  # the launcher's whole process group is gone


def _runs_from(pid: str, folder) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return str(folder).encode() in fh.read()
    except OSError:
        return False
