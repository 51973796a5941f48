"""A GPU-sharing layer named in the text (HAMi's device plugin preloads libvgpu.so): the interposer
candidate for a hang, decided beside a rank hung in init; other spellings are not it."""

from __future__ import annotations

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.test_runbook import diagnose

# -- a GPU-sharing layer named in the text (HAMi's device plugin preloads libvgpu.so) ---------------
HAMI = "The inference pods get their GPUs from HAMi v2.9.0; NCCL init never finishes.\n"


def test_a_text_that_names_hami_is_the_interposer_candidate_for_a_hang(tmp_path):
    rc, d, path = _diagnose(tmp_path, HAMI, "--symptom", "hang")
    assert rc == 3 and d["findings"][0]["cause"] == "gpu_sharing_interposer_deadlock"
    assert d["findings"][0]["supporting"] == [f"{path}:1: {HAMI.strip()}"]
    assert d["findings"][0]["confidence"] == "low"  # a name, not a stack in init: the runbook does not decide it


def test_hami_named_beside_a_rank_hung_in_init_is_decided(tmp_path):
    frame = "#5  0x00007f3c8e2a1b4d in bootstrapAllGather(void*, void*, int) () from /usr/lib/x86_64-linux-gnu/libnccl.so.2\n"
    _, d, _ = _diagnose(tmp_path, HAMI + frame)
    assert d["root_cause"]["id"] == "gpu_sharing_interposer_deadlock" and d["root_cause"]["confidence"] == "high"


def test_other_spellings_and_the_pass_through_switch_are_not_the_interposer():
    for text in ("Our admin, Hami, restarted the job.", "CUDA_DISABLE_CONTROL=true"):
        assert signatures.match(text) is None, text


def test_a_lone_interposer_line_is_a_low_candidate_and_a_hung_init_under_it_is_decided(tmp_path):
    hami = "[HAMI-core Msg(960:140526578577408:libvgpu.c:873)]: Initializing.....\n"
    alone = diagnose(tmp_path, hami)
    assert [(f["cause"], f["confidence"]) for f in alone["findings"]] == [("gpu_sharing_interposer_deadlock", "low")]
    hung = diagnose(tmp_path, hami + "    ncclCommInitRank (libnccl.so.2)\n")
    assert (hung["root_cause"]["id"], hung["root_cause"]["node"]) == ("gpu_sharing_interposer_deadlock",
                                                                     "nccl_log.interposer_hang")
