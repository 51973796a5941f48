"""The lines a differential step cites against a cause are those its fact was read from; a slow job
whose NCCL lines never name the network still asks which it chose."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import ranked as _ranked


# -- the lines a differential step cites against a cause are those its fact was read from -----------
def test_a_step_against_a_cause_cites_its_own_outputs_not_every_host_output(tmp_path):
    text = ("node1:1234:1300 [0] NCCL INFO NET/IB : No device found.\n"
            "node1:1234:1300 [0] NCCL INFO Using network Socket\n"
            "$ nvidia-smi topo -m\n\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV12\tPXB\t0-31\t0\n"
            "GPU1\tNV12\t X \tPXB\t0-31\t0\nNIC0\tPXB\tPXB\t X \t\t\n\nLegend:\n  NIC0: mlx5_0\n"
            "$ cat /proc/cmdline\nBOOT_IMAGE=/vmlinuz root=/dev/sda1 iommu=pt\n")
    _, d, path = _diagnose(tmp_path, text, "--symptom", "slow")
    hidden = next(f for f in d["findings"] if f["cause"] == "container_missing_ib_devices")
    assert hidden["contradicting"][0] == f"{path}:1-2: NCCL could open the RDMA devices -> no"
    assert d["findings"][0]["supporting"][0] == f"{path}:1-2: log.job.scope"


# -- NCCL 2.23+ bootstrap: the out-of-band device, the root's checks, NCCL_COMM_ID, accept -------------
P = "gpu-node-1:4242:4301 [0] "


def test_a_slow_job_with_nccl_lines_that_never_name_the_network_still_asks(tmp_path):
    text = (f"{P}NCCL INFO NCCL version 2.21.5+cuda12.4\n"
            f"{P}NCCL INFO comm 0x5581c0 rank 0 nranks 16 cudaDev 0 busId 1a000 commId 0x1 - Init COMPLETE\n")
    _, d, _ = _diagnose(tmp_path, text, "--symptom", "slow")
    assert _ranked(d)[:2] == ["socket_fallback", "gdr_disabled"]
