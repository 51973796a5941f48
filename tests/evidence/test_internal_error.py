"""NCCL's ncclInternalError as nccl-tests and PyTorch print it: a lone one is read and ranks what
returns it, older NCCL's short wording is the same kind, the words in prose are no signal."""

from __future__ import annotations

import json

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import cli


def _diagnose(tmp_path, text: str, *extra: str):
    path = tmp_path / "paste.txt"
    path.write_text(text)
    proc = cli("diagnose", "--evidence", str(path), "--format", "json", *extra)
    return proc.returncode, json.loads(proc.stdout), path


def test_a_lone_internal_error_is_read_and_ranks_what_returns_it(tmp_path):
    # NCCL 2.12-2.23 bootstrap.cc returns ncclInternalError for `no socket interface found` and for a
    # truncated bootstrap message; nccl-tests prints only the result string.
    line = "node-2: Test NCCL failure common.cu:1017 'internal error - please report this issue to the NCCL developers / '"
    rc, d, path = _diagnose(tmp_path, line + "\n")
    assert rc == 3 and d["verdict"] == "inconclusive" and d["healthy"] is None
    assert [(f["cause"], f["confidence"]) for f in d["findings"]] == \
        [("wrong_socket_ifname", "low"), ("nccl_version_mismatch", "low")]
    assert d["findings"][0]["supporting"] == [f"{path}:1: {line}"]
    assert d["findings"][1]["next_step"] == "paste the `NCCL version` line of every host"


def test_the_short_wording_of_older_nccl_is_the_same_kind(tmp_path):
    line = "ip-0AB85F07: Test NCCL failure common.cu:775 'internal error'"  # ncclGetErrorString up to 2.17
    assert signatures.match(line).kind == "internal_error"
    _, d, _ = _diagnose(tmp_path, line + "\n")
    assert [f["cause"] for f in d["findings"]] == ["wrong_socket_ifname", "nccl_version_mismatch"]


def test_a_word_internal_error_in_prose_is_no_signal():
    assert signatures.match("we hit an internal error in our scheduler") is None
