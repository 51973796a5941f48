"""The example recording and alerting rules (docs/examples/allreduce-doctor-alerts.yaml) against the
metrics as prometheus_client's own text parser reads them, and against Prometheus' conventions:
rate() only over a counter (`*_total`, TYPE counter: https://prometheus.io/docs/concepts/metric_types/),
never a raw counter compared; recording rules named level:metric:operations with `_total` stripped
under rate() and aggregations by `without` (https://prometheus.io/docs/practices/rules/);
`promtool check rules` too where promtool is installed."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from allreduce_doctor.doctor import Doctor
from allreduce_doctor.hosts.snapshot import SnapshotHost
from allreduce_doctor.metrics.port_rates import attach_run
from allreduce_doctor.metrics.prometheus import render_prometheus
from allreduce_doctor.session import Options, Session
from tests.healthcheck.conftest import ROOT, bundle

RULES = ROOT / "docs" / "examples" / "allreduce-doctor-alerts.yaml"
NAME = re.compile(r"(?<![\w:])([a-z_]*:?allreduce_doctor_\w*(?::\w+)?)(\{[^}]*\})?(\[\w+\])?")
RECORD_NAME = re.compile(r"[a-z_]+:(allreduce_doctor_[a-z_]+):([a-z0-9_]+)")


def emitted() -> dict[str, tuple[str, set[str]]]:
    """sample name -> (its family's type, its label names), from real RoCE and IB scenarios."""
    out: dict[str, tuple[str, set[str]]] = {}
    for scenario in ("roce-pause-storm", "ib-congestion"):
        session = Session(Doctor.load(), SnapshotHost(bundle(scenario)), Options(interval=0))
        data = attach_run(session.diagnose().to_dict(), session.observations, 0.0)
        for family in text_string_to_metric_families(render_prometheus(data)):
            for sample in family.samples:
                out.setdefault(sample.name, (family.type, set()))[1].update(sample.labels)
    return out


def rules() -> list[dict]:
    return [r for group in yaml.safe_load(RULES.read_text())["groups"] for r in group["rules"]]


def test_every_rule_names_only_what_is_emitted_or_recorded():
    metrics = emitted()
    recorded = {r["record"] for r in rules() if "record" in r}
    seen = set()
    for rule in rules():
        if "record" in rule:
            assert set(rule) <= {"record", "expr", "labels"}, rule
        else:
            assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"} and rule["alert"], rule
        for name, selector, window in NAME.findall(rule["expr"]):
            seen.add(name)
            if name in recorded:
                continue
            assert name in metrics, (rule.get("record") or rule["alert"], name)
            kind, labels = metrics[name]
            assert set(re.findall(r"(\w+)\s*[=!]~?", selector)) <= labels, (name, selector)
            inside_rate = re.search(rf"\b(?:rate|irate|increase)\(\s*{name}\b", rule["expr"]) is not None
            if kind == "counter":  # a counter is read through rate(), never compared raw
                assert name.endswith("_total") and inside_rate and window, (rule, name)
            else:
                assert not inside_rate, (rule, name)  # rate() of a gauge means nothing
    assert {"allreduce_doctor_port_rdma_loss_total", "allreduce_doctor_port_pause_duration_seconds_total",
            "allreduce_doctor_check", "allreduce_doctor_verdict", "allreduce_doctor_cause",
            "allreduce_doctor_port_loss_events_per_second"} <= seen
    assert "instance_device_port:allreduce_doctor_port_rdma_loss:rate15m" in seen  # an alert on a recorded rate


def test_recording_rules_follow_the_naming_convention():
    for rule in [r for r in rules() if "record" in r]:
        m = RECORD_NAME.fullmatch(rule["record"])
        assert m, rule["record"]
        metric, operations = m.groups()
        sources = [n for n, _, _ in NAME.findall(rule["expr"])]
        assert len(sources) == 1, rule
        if "rate(" in rule["expr"]:
            assert sources[0] == metric + "_total" and operations.startswith("rate"), rule
        else:
            assert sources[0] == metric, rule
        assert " by " not in rule["expr"] and " by(" not in rule["expr"], rule  # `without` keeps job and the rest
        if "sum" in rule["expr"]:
            assert "sum without (" in rule["expr"], rule


def test_every_check_outcome_is_a_state_set():
    metrics = emitted()
    assert metrics["allreduce_doctor_check"] == ("gauge", {"check", "outcome"})
    assert metrics["allreduce_doctor_port_rdma_loss_total"][0] == "counter"


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_promtool_accepts_the_rules():
    proc = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
