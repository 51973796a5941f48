"""NCCL 2.23+ bootstrap: an out-of-band interface setting that matches nothing names the bootstrap
interface; bootstrap failures without a catalogue cause say what they mean."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_json as _diagnose

# -- NCCL 2.23+ bootstrap: the out-of-band device, the root's checks, NCCL_COMM_ID, accept -------------
P = "gpu-node-1:4242:4301 [0] "


def test_an_oob_ifname_that_matches_nothing_names_the_bootstrap_interface(tmp_path):
    text = (f"{P}NCCL INFO NCCL_OOB_NET_ENABLE set by environment to 1\n"
            f"{P}bootstrap.cc:528 NCCL WARN no device found matching mlx5_9, verify NCCL_OOB_NET_IFNAME\n")
    _, d, path = _diagnose(tmp_path, text)
    first = d["findings"][0]
    assert first["cause"] == "wrong_socket_ifname"
    assert first["supporting"][0] == (f"{path}:2: bootstrap.cc no device found matching mlx5_9, verify "
                                      "NCCL_OOB_NET_IFNAME")
    assert first["next_step"].startswith("paste the job's NCCL_OOB_NET_IFNAME and NCCL_OOB_NET_ENABLE")


@pytest.mark.parametrize("warn, kind", [
    ("bootstrap.cc:327 NCCL WARN Bootstrap Root : mismatch in info from procs, nranks 16 vs 8, nroots 1 vs 1, "
     "iroot 0 vs 0", "bootstrap_job_mismatch"),
    ("bootstrap.cc:348 NCCL WARN Bootstrap Root : rank 3 of 16 ranks has already checked in", "bootstrap_job_mismatch"),
    ("bootstrap.cc:114 NCCL WARN Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or "
     "<hostname>:<port>", "comm_id_invalid"),
    ("misc/socket.cc:449 NCCL WARN socketTryAccept: exceeded error retry count after 35 attempts, Too many open files",
     "accept_failed"),
])
def test_bootstrap_failures_without_a_catalogue_cause_say_what_they_mean(tmp_path, warn, kind):
    rc, d, path = _diagnose(tmp_path, P + warn + "\n")
    assert d["findings"] == [] and d["verdict"] == "inconclusive" and d["healthy"] is None
    reason = next(i["reason"] for i in d["inconclusive"] if i["node"] == "evidence")
    assert reason == f"{path}:1: {signatures.by_kind()[kind].says}; no cause of the catalogue covers it"
