"""PyTorch's words for ncclResult values are read, not refused; invalid usage names no cause and says so."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_rc_json as _diagnose
from tests.evidence.helpers import facts

P = "gpu-a:4242:4301 [0] "


def test_pytorchs_words_for_ncclresults_are_read_not_refused(tmp_path):
    # torch/csrc/distributed/c10d/NCCLUtils.cpp getNcclErrorDetailStr, each on a line of its own.
    for line, kind in (("ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                        "prematurely.", "remote_error"),
                       ("ncclUnhandledCudaError: Call to CUDA function failed.", "cuda_failure"),
                       ("ncclInvalidUsage: This usually reflects invalid usage of NCCL library.", "invalid_usage")):
        assert list(facts(tmp_path, line + "\n")["log.nccl"]["errors"]) == [kind], line


def test_invalid_usage_names_no_cause_and_says_so(tmp_path):
    text = f"{P}init.cc:943 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000\n"
    rc, d = _diagnose(tmp_path, text)
    assert rc == 3 and d["root_cause"] is None and d["findings"] == []
    reasons = [i["reason"] for i in d["inconclusive"] if i["node"] == "evidence"]
    assert reasons[0] == (f"{tmp_path / 'paste.txt'}:1: NCCL returned ncclInvalidUsage or ncclInvalidArgument: the "
                          "program or its launcher called NCCL wrongly (two ranks on one GPU, a rank or count out of "
                          "range); the WARN before it names the call; no cause of the catalogue covers it")
