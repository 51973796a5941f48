"""The reporter's symptom (hang, slow, crash, error: symptoms.SYMPTOMS), derived once for the ranked
differential, its gaps and the report's words: what the user told (--symptom) first; else "slow" when the
text measured busbw below what its NICs carry (a table with numbers is itself a symptom, issue 12); else
"hang" when a stack of a rank waits in NCCL (signatures.yaml hang_in_*) or PyTorch's watchdog timed out,
and the process was not killed (a crash's backtrace says where it died, not that it waits); else what the
reporter's own words say (evidence/report_words.py); else unsaid (None)."""

from __future__ import annotations

from allreduce_doctor.evidence.kinds import CRASHES, HANG_FRAMES


def derive(told: str | None, bandwidth: dict | None, kinds: set[str], words: dict | None) -> str | None:
    """`bandwidth`: busbw.summary of the observations; `kinds`: the signature kinds the text shows;
    `words`: log.job's `report`."""
    if told:
        return told
    if bandwidth is not None and bandwidth.get("verdict") == "below":
        return "slow"
    if HANG_FRAMES & kinds and not CRASHES & kinds:
        return "hang"
    return (words or {}).get("symptom")
