"""IB asynchronous events as NCCL prints them: a non-fatal port error is a port event, a fatal QP
event is recognized and names no cause it cannot support."""

from __future__ import annotations

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_rc_json as _diagnose

P = "node-a:4242:4301 [3] "


def test_a_non_fatal_port_error_of_2_23_and_2_30_is_a_port_event():
    for message in ("NET/IB : mlx5_0:1 Got async error event: port error",
                    "NET/IB : mlx5_0:1 Got non-fatal async event: port error(10)"):
        assert signatures.match(message).kind == "port_event", message


def test_a_fatal_qp_event_is_recognized_and_names_no_cause_it_cannot_support(tmp_path):
    text = (f"{P}transport/net_ib.cc:180 NCCL WARN NET/IB : mlx5_2:1 async fatal event on QP (0x7f3a2c01d2b0): "
            "local work queue catastrophic error\n")
    rc, d = _diagnose(tmp_path, text)
    assert rc == 3 and d["findings"] == [] and d["verdict"] == "inconclusive"
    assert any("moved a QP to error on its own" in i["reason"] for i in d["inconclusive"])
