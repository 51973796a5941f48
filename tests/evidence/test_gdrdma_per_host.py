"""GPUDirect RDMA per host from the NET channel lines: a host whose connections never use GDRDMA has it
off; none on every host is topology, not a host; lines that name no host stay open."""

from __future__ import annotations

import json

from tests.evidence.helpers import cli


def _diagnose(tmp_path, text: str, *extra: str):
    path = tmp_path / "paste.txt"
    path.write_text(text)
    proc = cli("diagnose", "--evidence", str(path), "--format", "json", *extra)
    return proc.returncode, json.loads(proc.stdout), path


def _conn(host: str, via: str, direction: str = "send") -> str:
    return f"{host}:22612:22693 [0] NCCL INFO Channel 00/0 : 0[7000] -> 8[7000] [{direction}] via {via}\n"


def _gdr_step(d: dict) -> dict:
    return next(p for p in d["path"] if p["node"] == "nccl_log.gdr")


def test_a_host_whose_net_connections_never_use_gdrdma_has_gpudirect_rdma_off(tmp_path):
    # NCCL's GDR support check is node-wide (net_ib ncclIbGdrSupport): one node without the peer
    # memory module prints no /GDRDMA while its peers do (NVIDIA/nccl#897, NVIDIA/nccl-tests#152).
    text = (_conn("gpu32", "NET/IB/1/GDRDMA") + _conn("gpu32", "NET/IB/1/GDRDMA/Shared")
            + _conn("gpu37", "NET/IB/0", "receive") + _conn("gpu37", "NET/IB/5/Shared", "receive"))
    rc, d, _ = _diagnose(tmp_path, text)
    assert d["root_cause"]["id"] == "gdr_disabled"
    step = _gdr_step(d)
    assert step["outcome"] == "yes" and step["value"]["log.job.gdr.hosts_without"] == ["gpu37"]


def test_connections_without_gdrdma_on_every_host_are_topology_not_a_host(tmp_path):
    # Each host has GDR on its near NIC and not on a far one (distance > NCCL_NET_GDR_LEVEL).
    text = (_conn("gpu32", "NET/IB/1/GDRDMA") + _conn("gpu32", "NET/IB/5")
            + _conn("gpu37", "NET/IB/1/GDRDMA", "receive") + _conn("gpu37", "NET/IB/5", "receive"))
    _, d, _ = _diagnose(tmp_path, text)
    step = _gdr_step(d)
    assert step["outcome"] == "no" and step["value"]["log.job.gdr.hosts_without"] == []
    assert "gdr_disabled" not in [f["cause"] for f in d["findings"]]


def test_mixed_gdrdma_on_lines_that_name_no_host_stays_open(tmp_path):
    text = ("9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n"
            "9[1a000] -> 2[6b000] [receive] via NET/IB/1\n")
    _, d, _ = _diagnose(tmp_path, text)
    step = _gdr_step(d)
    assert step["outcome"] == "unknown" and step["value"]["log.job.gdr.hosts_without"] is None
    assert [(f["cause"], f["confidence"]) for f in d["findings"]] == [("gdr_disabled", "low")]
