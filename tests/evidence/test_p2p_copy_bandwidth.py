"""Peer-to-peer copy bandwidth read per GPU pair: direct copies below the host-staged copy ask the
IOMMU question first, name ACS with the IOMMU in passthrough, and faster ones are no finding."""

from __future__ import annotations

import json

from tests.evidence.helpers import cli, facts


def _diagnose(tmp_path, text: str):
    path = tmp_path / "paste.txt"
    path.write_text(text)
    proc = cli("diagnose", "--evidence", str(path), "--format", "json")
    return proc.returncode, json.loads(proc.stdout), path


def _p2p_test(direct: tuple[str, str]) -> str:
    """p2pBandwidthLatencyTest (CUDA samples) on two PCIe GPUs, in the shape it prints; `direct` is the
    P2P=Enabled bandwidth of 0->1 and 1->0."""
    return ("[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n"
            "Device: 0, NVIDIA RTX A6000, pciBusID: 3, pciDeviceID: 0, pciDomainID:0\n"
            "Device: 1, NVIDIA RTX A6000, pciBusID: 21, pciDeviceID: 0, pciDomainID:0\n"
            "Device=0 CAN Access Peer Device=1\n"
            "Device=1 CAN Access Peer Device=0\n\n"
            "***NOTE: In case a device doesn't have P2P access to other one, it falls back to normal memcopy procedure.\n"
            "So you can see lesser Bandwidth (GB/s) and unstable Latency (us) in those cases.\n\n"
            "P2P Connectivity Matrix\n     D\\D     0     1\n     0\t     1     1\n     1\t     1     1\n"
            "Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D     0      1 \n"
            "     0 673.20  13.15 \n     1  12.99 673.20 \n"
            "Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)\n   D\\D     0      1 \n"
            f"     0 673.49  {direct[0]} \n     1  {direct[1]} 672.33 \n"
            "Bidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D     0      1 \n"
            "     0 675.01  17.46 \n     1  17.50 676.12 \n"
            "P2P=Disabled Latency Matrix (us)\n   GPU     0      1 \n     0   1.59  15.33 \n     1  20.72   1.82 \n")


SLOW_P2P = _p2p_test(("2.60", "2.12"))


def test_direct_peer_copies_below_the_host_staged_copy_are_read_per_pair(tmp_path):
    p2p = facts(tmp_path, SLOW_P2P)["log.host"]["cuda_p2p"]
    assert (p2p["can"], p2p["pairs"], p2p["slow_pairs"], p2p["slower_than_host"]) == (2, 2, 2, True)
    assert p2p["example"] == "GPU0->GPU1 2.60 GB/s direct, 13.15 GB/s through host memory"
    assert p2p["source"] == f"{tmp_path}/paste.txt:1-29"


def test_slow_peer_copies_ask_the_iommu_question_first(tmp_path):
    rc, d, path = _diagnose(tmp_path, SLOW_P2P)
    assert rc == 3 and d["verdict"] == "inconclusive"
    steps = {p["node"]: p["outcome"] for p in d["path"]}
    assert steps["nccl_log.p2p_slow"] == "yes" and steps["nccl_log.hang_iommu"] == "unknown"
    assert [f["cause"] for f in d["findings"]] == ["iommu_enabled", "pcie_acs_enabled"]
    # The command line is not in the text; the matrices that led to the question are, with their lines.
    assert d["findings"][0]["supporting"] == [
        f"{path}:1-29: Direct GPU peer copies are not slower than copies through host memory -> yes; "
        "The kernel command line leaves the IOMMU out of peer DMA -> unknown"]


def test_slow_peer_copies_with_the_iommu_in_passthrough_name_acs(tmp_path):
    rc, d, _ = _diagnose(tmp_path, "BOOT_IMAGE=/vmlinuz-6.5.0 root=/dev/sda1 ro amd_iommu=on iommu=pt\n" + SLOW_P2P)
    assert rc == 1 and d["root_cause"]["id"] == "pcie_acs_enabled" and d["root_cause"]["confidence"] == "high"
    assert {p["node"]: p["outcome"] for p in d["path"]}["nccl_log.hang_iommu"] == "no"


def test_direct_peer_copies_faster_than_the_staged_copy_are_no_finding(tmp_path):
    text = _p2p_test(("25.10", "25.08"))
    assert facts(tmp_path, text)["log.host"]["cuda_p2p"]["slower_than_host"] is False
    _, d, _ = _diagnose(tmp_path, text)
    assert {p["node"]: p["outcome"] for p in d["path"]}["nccl_log.p2p_slow"] == "no"
    assert d["findings"] == []
