"""system_error needs NCCL's words: libfabric's EFA fork banner (efa_fork_support.c) is fork-unsafe
only, and NCCL's own system error is still read."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_json


def _errors(d: dict) -> dict:
    return next(e["observed"] for e in d["evidence"] if e["fact"] == "log.nccl.errors") or {}


def _ranked(d: dict) -> list[tuple[str, str]]:
    return [(f["cause"], f["confidence"]) for f in d["findings"]]


# -- 6. system_error needs NCCL's words: libfabric's EFA fork banner (efa_fork_support.c) is not one -----
FORK_BANNER = ("A process has executed an operation involving a call\nto the fork() system call to create a child "
               "process.\n\nAs a result, the Libfabric EFA provider is operating in\na condition that could result in "
               "memory corruption or\nother system errors.\n\nFor the Libfabric EFA provider to work safely when "
               "fork()\nis called please do one of the following:\n1) Set the environment variable:\n"
               "          FI_EFA_FORK_SAFE=1\n")


def test_the_fork_banner_is_fork_unsafe_only(tmp_path):
    assert signatures.match("other system errors.") is None
    rc, d, _ = diagnose_json(tmp_path, FORK_BANNER)
    assert sorted(_errors(d)) == ["efa_fork_unsafe"] and _ranked(d) == [("efa_ofi_misconfigured", "medium")]


@pytest.mark.parametrize("line", [
    "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.10.3",
    "node-2: Test NCCL failure common.cu:1017 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '",
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (run with "
    "NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
])
def test_nccls_system_error_is_still_read(line):
    assert signatures.match(line).kind == "system_error"
