"""An Istio sidecar in the pod beside a hung init points at the mesh; the same bootstrap lines without
it name no cause."""

from __future__ import annotations

import json

from tests.evidence.helpers import cli

P = "gpu-node-1:4242:4301 [0] "
BOOTSTRAP = (f"{P}NCCL INFO Bootstrap : Using eth0:10.0.130.10<0>\n"
             f"{P}NCCL INFO NCCL version 2.23.4+cuda12.2\n")


def _diagnose(tmp_path, text: str, *extra: str):
    path = tmp_path / "paste.txt"
    path.write_text(text)
    proc = cli("diagnose", "--evidence", str(path), "--format", "json", *extra)
    return proc.returncode, json.loads(proc.stdout), path


def test_an_istio_sidecar_beside_a_hung_init_points_at_the_mesh(tmp_path):
    text = "the pods themselves have istio-proxy envoy\n" + BOOTSTRAP
    rc, d, path = _diagnose(tmp_path, text, "--symptom", "hang")
    assert rc == 3 and d["root_cause"]["id"] == "socket_blocked"
    first = d["findings"][0]
    assert first["confidence"] == "low"
    assert first["supporting"] == [f"{path}:1: the pods themselves have istio-proxy envoy"]
    assert "sidecar.istio.io/inject" in first["next_step"]


def test_the_same_bootstrap_lines_without_the_sidecar_name_no_cause(tmp_path):
    rc, d, _ = _diagnose(tmp_path, BOOTSTRAP, "--symptom", "hang")
    assert rc == 3 and d["root_cause"] is None and d["findings"] == []
