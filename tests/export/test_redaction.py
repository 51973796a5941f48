"""Secrets never reach a ticket: every format passes the diagnosis through the snapshot redaction."""

from __future__ import annotations

import json

import pytest

from allreduce_doctor.export import FORMATS, render_export
from allreduce_doctor.redact import redact_diagnosis
from tests.export.goldens import diagnose_bundle, stored_diagnosis
from tests.export.hostile import GITHUB_TOKEN, SLACK_TOKEN, planted_secrets_diagnosis

SECRETS = (GITHUB_TOKEN, SLACK_TOKEN, "plainvalue123", "hunter2", GITHUB_TOKEN[:10] + "xyz")


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_planted_tokens_are_redacted_in_every_format(fmt):
    text = render_export(planted_secrets_diagnosis(), fmt)
    for secret in SECRETS:
        assert secret not in text, (fmt, secret)
    assert "redacted" in text


def test_the_ticket_says_where_it_redacted():
    d = planted_secrets_diagnosis()
    # Where the planted values sit in the stored diagnosis (its rows move when the runbooks grow).
    ev = next(i for i, row in enumerate(d["evidence"]) if row.get("fact") == "nccl.processes")
    step = next(i for i, s in enumerate(d["path"]) if "nccl.env.vars.NCCL_DEBUG_FILE" in (s.get("value") or {}))
    ticket = json.loads(render_export(d, "json"))
    assert ticket["redacted"] == [
        f"evidence[{ev}].observed[0].env.NCCL_DEBUG_FILE",
        f"evidence[{ev}].observed[0].env.HF_TOKEN",
        f"evidence[{ev}].observed[0].env.NCCL_NET_PLUGIN_URL",
        "findings[0].value[0].note",
        f"path[{step}].value.nccl.env.vars.NCCL_DEBUG_FILE",
        "remediation[2].step",
    ]
    env = next(r for r in ticket["raw"] if r["fact"] == "nccl.processes")["value"][0]["env"]
    assert env == {"HF_TOKEN": "<redacted>", "NCCL_DEBUG_FILE": "/tmp/nccl.<redacted>.log",
                   "NCCL_IB_HCA": "mlx5_0,mlx5_1",
                   "NCCL_NET_PLUGIN_URL": "https://bob:<redacted>@plugins.example.com/x.so"}
    md = render_export(planted_secrets_diagnosis(), "github")
    assert f"6 value(s) replaced by \\<redacted\\> in this ticket, at: `evidence[{ev}].observed[0].env.NCCL_DEBUG_FILE`, " in md


def test_nothing_is_redacted_in_the_scenario_diagnoses():
    for d in (stored_diagnosis("roce-pfc-off"), stored_diagnosis("ib-healthy"), diagnose_bundle("ib-link-degraded")):
        redacted, places = redact_diagnosis(d)
        assert places == [] and redacted == d


def test_a_multiline_value_with_a_secret_assignment():
    d = stored_diagnosis("ib-port-down")
    d["evidence"][0]["observed"] = "NCCL_DEBUG=INFO\nMY_API_KEY=abc123\nNCCL_IB_HCA=mlx5"
    redacted, places = redact_diagnosis(d)
    assert redacted["evidence"][0]["observed"] == "NCCL_DEBUG=INFO\nMY_API_KEY=<redacted>\nNCCL_IB_HCA=mlx5"
    assert places == ["evidence[0].observed"]
