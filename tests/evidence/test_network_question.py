"""A slow job whose log never names its network asks sockets first, then GPUDirect RDMA; the
question is not asked when the log answers it or nothing was slow."""

from __future__ import annotations

import json

from tests.evidence.helpers import cli

P = "gpu-a:4242:4301 [0] "


VERSION_ONLY = f"{P}NCCL INFO NCCL version 2.21.5+cuda12.4\n"


def _slow(tmp_path, text: str, *symptom: str) -> dict:
    path = tmp_path / "paste.txt"
    path.write_text(text)
    return json.loads(cli("diagnose", "--evidence", str(path), "--format", "json", *symptom).stdout)


def test_a_slow_job_whose_log_never_names_its_network_asks_sockets_first_then_gdr(tmp_path):
    d = _slow(tmp_path, VERSION_ONLY, "--symptom", "slow")
    assert [(f["cause"], f["confidence"], f["contradicting"]) for f in d["findings"]] == [
        ("socket_fallback", "low", []), ("gdr_disabled", "low", [])]  # a tie: the text tells neither (dev11)
    assert d["findings"][0]["supporting"] == [f"{tmp_path / 'paste.txt'}:1: NCCL runs, and no line says which "
                                              "network it chose"]
    assert "`Using network Socket`" in d["findings"][0]["next_step"]


def test_the_network_question_is_not_asked_when_the_log_answers_it_or_nothing_was_slow(tmp_path):
    on_ib = VERSION_ONLY + f"{P}NCCL INFO Using network IB\n"
    assert "socket_fallback" not in [f["cause"] for f in _slow(tmp_path, on_ib, "--symptom", "slow")["findings"]]
    assert _slow(tmp_path, VERSION_ONLY)["findings"] == []
    assert _slow(tmp_path, VERSION_ONLY, "--symptom", "hang")["findings"] == []
