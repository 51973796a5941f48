"""The GPUDirect RDMA question from the topology: GPUs beyond PXB of every NIC raise it for a slow
job; within reach, beside a crash, with a set GDR level or NET lines, or on a VM's all-PHB
topology they do not."""

from __future__ import annotations

import json

from tests.evidence.helpers import cli, facts

P = "gpu-a:4242:4301 [0] "


def _topo(paths: dict[str, str]) -> str:
    """`nvidia-smi topo -m` of four GPUs and two NICs; `paths` gives each GPU's path to NIC0 (NIC1 is
    SYS from all), in the shape nvidia-smi prints it, with its NIC legend."""
    rows = []
    names = ["GPU0", "GPU1", "GPU2", "GPU3"]
    for i, gpu in enumerate(names):
        cells = ["X" if j == i else ("NV4" if j // 2 == i // 2 else "SYS") for j in range(4)]
        rows.append(f"{gpu}\t" + "\t".join(cells) + f"\t{paths[gpu]}\tSYS\t0-23\t0\t\tN/A")
    return ("\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n" + "\n".join(rows) +
            "\nNIC0\t" + "\t".join(paths[g] for g in names) + "\t X \tSYS\t\t\t\t\n"
            "NIC1\tSYS\tSYS\tSYS\tSYS\tSYS\t X \t\t\t\t\n\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n"
            "  NIC0: mlx5_0\n  NIC1: mlx5_1\n")


FAR = _topo({"GPU0": "NODE", "GPU1": "NODE", "GPU2": "PIX", "GPU3": "PIX"})


def test_gpus_beyond_pxb_of_every_nic_are_a_gdr_candidate_when_the_job_is_slow(tmp_path):
    path = tmp_path / "paste.txt"
    path.write_text(FAR)
    d = json.loads(cli("diagnose", "--evidence", str(path), "--format", "json", "--symptom", "slow").stdout)
    assert [(f["cause"], f["confidence"]) for f in d["findings"]] == [("gdr_disabled", "medium")]
    assert d["findings"][0]["supporting"] == [
        f"{path}:1-16: GPU0 (NODE to mlx5_0), GPU1 (NODE to mlx5_0): nearest NIC beyond PXB, NCCL's default "
        "NCCL_NET_GDR_LEVEL, so no GPUDirect RDMA for them"]
    assert d["findings"][0]["contradicting"] == []


def test_the_topology_raises_no_gdr_question_when_it_is_within_reach_or_beside_a_crash(tmp_path):
    near = _topo({"GPU0": "PXB", "GPU1": "PXB", "GPU2": "PIX", "GPU3": "PIX"})
    for text, symptom in ((near, "slow"), (FAR, "crash")):
        path = tmp_path / "paste.txt"
        path.write_text(text)
        d = json.loads(cli("diagnose", "--evidence", str(path), "--format", "json", "--symptom", symptom).stdout)
        assert d["findings"] == [], symptom


def test_a_set_gdr_level_or_net_lines_decide_instead_of_the_topology(tmp_path):
    level = "\nexport NCCL_NET_GDR_LEVEL=SYS\n"  # the job's own reach: the default distance no longer says
    lines = f"{P}NCCL INFO Channel 00/0 : 0[0] -> 4[0] [send] via NET/IB/0/GDRDMA\n"
    for extra in (level, lines):
        gdr = facts(tmp_path, FAR + extra)["log.job"]["gdr"]
        assert gdr["out_of_reach"] == [], extra
    assert [g["gpu"] for g in facts(tmp_path, FAR)["log.job"]["gdr"]["out_of_reach"]] == ["GPU0", "GPU1"]


def test_a_topology_where_every_gpu_nic_path_is_phb_is_a_vms_and_raises_no_gdr_question(tmp_path):
    flat = _topo({"GPU0": "PHB", "GPU1": "PHB", "GPU2": "PHB", "GPU3": "PHB"}).replace("\tSYS\t0-23", "\tPHB\t0-23")
    assert facts(tmp_path, flat)["log.job"]["gdr"]["out_of_reach"] == []
