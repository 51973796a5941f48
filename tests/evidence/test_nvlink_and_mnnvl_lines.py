"""CUDA's uncorrectable NVLink and ECC errors name the link and the GPU, not Fabric Manager; an MNNVL
clique without IMEX is recognized and names no catalogue cause."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_rc_json as _diagnose
from tests.evidence.helpers import ranked as _ranked

P = "node-a:4242:4301 [3] "


# -- CUDA's uncorrectable NVLink and ECC errors name the hardware, not Fabric Manager --------------------
# cuda.h CUDA_ERROR_NVLINK_UNCORRECTABLE (220) and CUDA_ERROR_ECC_UNCORRECTABLE (214), as
# cuGetErrorString words them; before the generic `Cuda failure`, whose first candidate is Fabric Manager.
def test_cuda_uncorrectable_nvlink_and_ecc_errors_name_the_link_and_the_gpu(tmp_path):
    nvlink = f"{P}transport/nvls.cc:165 NCCL WARN Cuda failure 'uncorrectable NVLink error detected during the execution'\n"
    _, d = _diagnose(tmp_path, nvlink)
    assert _ranked(d) == ["nvlink_degraded"]
    _, d = _diagnose(tmp_path, "RuntimeError: CUDA error: uncorrectable ECC error encountered\n")
    assert _ranked(d) == ["gpu_xid_errors"]
    assert d["findings"][0]["next_step"].startswith("paste `dmesg | grep -i xid`")


def test_an_mnnvl_clique_without_imex_is_recognized_and_names_no_catalogue_cause(tmp_path):
    # mnnvl.cc (v2.27.3-1..v2.30.7-1): FABRIC handles that IMEX cannot export or import; IMEX is its own
    # service (not Fabric Manager), and the catalogue has no cause for it: said, not guessed.
    text = (f"{P}mnnvl.cc:63 NCCL WARN MNNVL (cliqueSize 72) is available but not working on this system. Check the "
            "IMEX channel configuration (/dev/nvidia-caps-imex-channels). Set NCCL_MNNVL_ENABLE=0 to ignore this issue.\n")
    rc, d = _diagnose(tmp_path, text)
    assert rc == 3 and d["findings"] == []
    assert any("IMEX channels" in i["reason"] for i in d["inconclusive"])
