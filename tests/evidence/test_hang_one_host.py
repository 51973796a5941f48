"""A hang on one host with NCCL running and nothing failing (evidence/gaps.py hang_on_one_host): NCCL's
troubleshooting names PCI ACS and the IOMMU (peer traffic redirected to the root complex: "or even a
hang"). Both stay low: nothing in the text tells them apart. A host that printed a device for every rank
of the communicator holds the whole job (job.py scope)."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json, facts

# Two ranks of one host, init complete, then nothing (the shapes of NCCL 2.18-2.21 INFO lines).
ONE_HOST = """\
ws-01:2301:2301 [0] NCCL INFO Channel 00/02 :    0   1
ws-01:2301:2301 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via SHM/direct/direct
ws-01:2302:2302 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via SHM/direct/direct
ws-01:2301:2301 [0] NCCL INFO Connected all rings
ws-01:2301:2340 [0] NCCL INFO comm 0x5581c0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 47000 commId 0x9a1 - Init COMPLETE
ws-01:2302:2341 [1] NCCL INFO comm 0x5591d0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 48000 commId 0x9a1 - Init COMPLETE
"""


def test_every_rank_on_one_host_is_an_intra_node_job(tmp_path):
    assert facts(tmp_path, ONE_HOST)["log.job"]["scope"] == "intra"


def test_a_hang_on_one_host_names_acs_then_the_iommu_both_low(tmp_path):
    rc, data, path = diagnose_json(tmp_path, ONE_HOST, "--symptom", "hang")
    assert rc == 3
    assert [(f["cause"], f["confidence"]) for f in data["findings"]] == [
        ("pcie_acs_enabled", "low"), ("iommu_enabled", "low")]
    line = data["findings"][0]["supporting"][0]
    assert line.endswith(": every rank on one host, and no NCCL line failed before the hang") and str(path) in line


def test_without_a_hang_the_same_log_points_at_nothing(tmp_path):
    _, data, _ = diagnose_json(tmp_path, ONE_HOST)
    assert data["findings"] == [] and data["healthy"] is None


def test_a_hang_across_hosts_is_not_this(tmp_path):
    two = ONE_HOST.replace("ws-01:2302", "ws-02:2302")
    assert facts(tmp_path, two)["log.job"]["scope"] == "inter"
    _, data, _ = diagnose_json(tmp_path, two, "--symptom", "hang")
    assert data["findings"] == []
