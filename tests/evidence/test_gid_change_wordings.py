"""A GID change in every NCCL version's words points at GID drift."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_rc_json as _diagnose
from tests.evidence.helpers import facts

P = "gpu-a:4242:4301 [0] "


def test_a_gid_change_in_every_versions_words_points_at_gid_drift(tmp_path):
    # 2.4-2.22 `Got async event : GID table change`; 2.23.4-2.27.7 have no case for
    # IBV_EVENT_GID_CHANGE (18) and print `unknown event type (18)`; 2.28.3+ `GID table changed`.
    for message in ("Got async event : GID table change", "unknown event type (18)", "GID table changed"):
        rc, d = _diagnose(tmp_path, f"{P}transport/net_ib.cc:204 NCCL WARN NET/IB : mlx5_3:1 {message}\n")
        assert [(f["cause"], f["confidence"]) for f in d["findings"]] == [("gid_index_drift", "medium")], message
    other = facts(tmp_path, f"{P}transport/net_ib.cc:204 NCCL WARN NET/IB : mlx5_3:1 unknown event type (20)\n")
    assert list(other["log.nccl"]["errors"]) == ["ib_async_event"]  # IBV_EVENT_DEVICE_SPEED_CHANGE, not a GID change
