"""ras.cc's `NCCL version mismatch with remote peer` (2.24+): the job's nodes run different versions."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import signatures
from allreduce_doctor.evidence.nccl import NcclLog
from tests.evidence.helpers import diagnose_json

PREFIXES = ("node-a:4242:4301 [0] ", "")  # NCCL's own prefix, and the message quoted without it


def _ranked(d: dict) -> list[tuple[str, str]]:
    return [(f["cause"], f["confidence"]) for f in d["findings"]]


# -- 3. ras.cc `NCCL version mismatch with remote peer` (2.24+): the job's nodes run different versions ----
@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("message", [
    "ras/ras.cc:391 NCCL WARN NCCL version mismatch with remote peer 10.0.0.2<41231> (local: 22403, remote 22304)",
    "ras/ras.cc:415 (rasMsgHandleConnInit) NCCL WARN NCCL version mismatch with remote peer 10.0.0.2<41231> (local: "
    "2.30.7, remote 2.28.9)",
])
def test_the_ras_version_check_is_a_version_mismatch(prefix, message):
    log = NcclLog()
    assert log.feed(prefix + message, "paste.txt:1")
    assert list(log.errors) == ["version_mismatch"] and log.version is None
    assert log.errors["version_mismatch"]["first"].startswith("ras/ras.cc NCCL version mismatch with remote peer")


def test_the_ras_line_quoted_alone_is_no_remote_error():
    line = "NCCL version mismatch with remote peer 10.0.0.2<41231> (local: 2.30.7, remote 2.28.9)"
    assert signatures.match(line).kind == "version_mismatch"
    assert signatures.match("socketProgress: Connection closed by remote peer 10.0.0.2<41231>").kind == "remote_error"


def test_a_ras_version_mismatch_decides_the_versions_step(tmp_path):
    text = ("node-a:4242:4301 [0] NCCL INFO NCCL version 2.30.7+cuda13.0\n"
            "node-a:4242:4301 [0] ras/ras.cc:415 (rasMsgHandleConnInit) NCCL WARN NCCL version mismatch with remote "
            "peer 10.0.0.2<41231> (local: 2.30.7, remote 2.28.9)\n")
    rc, d, path = diagnose_json(tmp_path, text)
    assert rc == 1 and d["verdict"] == "fault" and _ranked(d) == [("nccl_version_mismatch", "high")]
    assert d["findings"][0]["supporting"][-1] == (f"{path}:2: ras/ras.cc NCCL version mismatch with remote peer "
                                                  "10.0.0.2<41231> (local: 2.30.7, remote 2.28.9)")
