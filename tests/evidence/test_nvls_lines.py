"""NCCL's NVLS lines judged by what nvls.cc means by each (issue 12, dev10): the bind failure NCCL
2.27-2.28 report at INFO and go on after is the Fabric Manager / NVSwitch fault its WARN twin names;
NVLS unsupported on the system (a PCIe node) is no fault, nor is a healthy DGX's NVLS setup, nor a
user buffer NCCL could not register with NVLS (it runs the collective without the registration)."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import signatures
from allreduce_doctor.evidence.nccl import NcclLog
from tests.evidence.helpers import diagnose_json

P = "gpu01:1234:1234 [0] NCCL INFO "
NVLS_STEP = "NVLink SHARP (NVLS) setup succeeded"
# src/transport/nvls.cc nvlsAllocateMem, v2.27.7-1 / v2.28.9-1 (NCCL_NVLS_ENABLE left at 2).
FALLBACK = (f"{P}Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1610612736 : CUDA error 802 "
            "'system not yet initialized'. Proceeding without NVLS support.\n")
# ncclNvlsInit: `NVLS multicast support is %savailable on dev %d` (v2.17.1-1..v2.26; `(NVLS_NCHANNELS %d)` 2.27-2.29).
DGX_H100 = (f"{P}NCCL version 2.21.5+cuda12.4\n"
            f"{P}NVLS multicast support is available on dev 0\n"
            f"{P}NVLS comm 0x55d0 headRank 0 nHeads 1 buffSize 1048576 memSize 2097152 nvlsPerRankSize 201326592 "
            "nvlsTotalSize 1610612736\n"
            f"{P}Connected NVLS tree\n"
            f"{P}comm 0x55d0 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0\n"
            f"{P}comm 0x55d0 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1 - Init COMPLETE\n")
PCIE = (f"{P}NCCL version 2.28.9+cuda12.9\n"
        f"{P}NVLS multicast support is not available on dev 0 (NVLS_NCHANNELS 0)\n"
        f"{P}comm 0x55d0 rank 0 nRanks 4 nNodes 1 localRanks 4 localRank 0 MNNVL 0\n"
        f"{P}Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n"
        f"{P}comm 0x55d0 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1 - Init COMPLETE\n")


def _step(d: dict) -> dict:
    return next(s for s in d["path"] if s["title"] == NVLS_STEP)


def test_an_info_bind_fallback_decides_fabric_manager_as_its_warn_twin_does(tmp_path):
    text = f"{P}NCCL version 2.27.7+cuda12.9\n" + FALLBACK
    rc, d, path = diagnose_json(tmp_path, text)
    assert rc == 1 and d["root_cause"]["id"] == "fabric_manager_not_ready" and d["root_cause"]["confidence"] == "high"
    assert (_step(d)["outcome"], _step(d)["badge"]) == ("yes", "fail")
    assert [f["contradicting"] for f in d["findings"]] == [[] for _ in d["findings"]]
    warn = ("gpu01:1234:1234 [0] transport/nvls.cc:284 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory "
            "of size 1610612736 : CUDA error 802 'system not yet initialized'.\n")
    rc_warn, d_warn, _ = diagnose_json(tmp_path, f"{P}NCCL version 2.29.7+cuda12.9\n" + warn)
    assert rc_warn == 1 and d_warn["root_cause"]["id"] == "fabric_manager_not_ready"


@pytest.mark.parametrize("text", [DGX_H100, PCIE], ids=["dgx-h100-nvls-in-use", "pcie-no-nvls"])
def test_nvls_in_use_or_unsupported_is_no_fault(tmp_path, text):
    rc, d, _ = diagnose_json(tmp_path, text)
    step = _step(d)
    assert (step["outcome"], step["badge"]) == ("no", "pass")
    assert step["means"] == "no NVLS setup failure in the log (NVLS unsupported on the system is not one)"
    assert "fabric_manager_not_ready" not in {f["cause"] for f in d["findings"]}


@pytest.mark.parametrize("line", [
    "transport/nvls.cc:709 NCCL WARN rank 0 failed to NVLS register sendbuff 0x7f2a40000000 sendbuffSize 1048576 "
    "recvbuff 0x7f2a40200000 recvbuffSize 1048576",  # 2.25.1: a WARN, and NCCL goes on unregistered
    "transport/nvls.cc:781 NCCL INFO rank 0 failed to NVLS register sendbuff 0x7f2a40000000 sendbuffSize 1048576 "
    "recvbuff 0x7f2a40200000 recvbuffSize 1048576",  # 2.26+: INFO
])
def test_a_user_buffer_nvls_could_not_register_is_no_nvls_failure(line):
    log = NcclLog()
    assert log.feed("gpu01:1234:1234 [0] " + line, "paste.txt:1")
    assert "nvls_failure" not in log.errors
    assert list(log.errors) == (["nvls_register_fallback"] if " WARN " in line else [])


def test_a_pasted_user_buffer_bind_error_is_no_cuda_failure():
    # 2.28+ INFO (NCCL_REG) `Failed to multicast-bind user buffer: CUDA error %d '%s'`, quoted without its prefix
    line = "Failed to multicast-bind user buffer: CUDA error 801 'operation not supported'"
    assert signatures.match(line).kind == "nvls_register_fallback"
    assert not signatures.by_kind()["nvls_register_fallback"].blocking
    assert "nvls_register_fallback" not in signatures.candidates()
    assert signatures.match("misc/cudawrap.cc:33 NCCL WARN Cuda failure 'initialization error'").kind == "cuda_failure"


def test_a_user_buffer_fallback_beside_a_healthy_dgx_log_names_no_cause(tmp_path):
    line = ("gpu01:1234:1234 [0] transport/nvls.cc:709 NCCL WARN rank 0 failed to NVLS register sendbuff 0x7f2a40000000 "
            "sendbuffSize 1048576 recvbuff 0x7f2a40200000 recvbuffSize 1048576\n")
    rc, d, _ = diagnose_json(tmp_path, DGX_H100 + line)
    assert _step(d)["outcome"] == "no"
    assert "fabric_manager_not_ready" not in {f["cause"] for f in d["findings"]}
