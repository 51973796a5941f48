"""The measured busbw against the ceiling of the hardware at hand, as a fact the walk can read (issue 28).

busbw.summary (the report's Bandwidth line) decides it from the pasted nccl-tests table, the node's busbw and
the operator's answers; deriving it here, from operator.answers among its inputs, is what lets `--answer
gpu_model=` / `nics_per_node=` / ... reach the runbook steps that end at expected_hardware_limit (and a
re-answer recompute it: session._dependents).
"""

from __future__ import annotations

from collections.abc import Callable

from allreduce_doctor.observations import MISSING, OK, Observation, Observations

Inputs = dict[str, Observation]
# busbw.summary, set by allreduce_doctor.busbw when it is imported (the Session imports it): the probes package
# does not import busbw, whose evidence words import the knowledge cache, which imports the probes (no cycle).
SUMMARY: dict[str, Callable[[Observations], dict | None]] = {}


def job_ceiling(inputs: Inputs) -> Observation:
    """{scope: one_host | nodes | None, hardware: at_limit | below | above_hardware | unknown | unmeasured, limit,
    measured_gbs, ceiling_gbs, note}. Nothing measured is `unmeasured`, a value the steps never read as healthy."""
    summary = SUMMARY.get("busbw")  # the report's own decision, written once
    if summary is None:
        return Observation("", None, MISSING, reason="the busbw summary is not loaded (allreduce_doctor.busbw)")
    facts = Observations()
    for fact, obs in inputs.items():
        facts.facts[fact] = obs
    bw = summary(facts)
    if bw is None:
        return Observation("", {"scope": None, "hardware": "unmeasured", "limit": None, "measured_gbs": None,
                                "ceiling_gbs": None, "note": None}, OK)
    one_host = bw.get("verdict") == "intra_node"
    ceiling = bw.get("ceiling") or {}
    # Where the measurement came from, as FILE:LINES of the table where there is one (a step judged on it shows
    # its lines, evidence/differential_steps.unshown), with the answers that took part.
    table, answers = inputs.get("log.tests"), inputs.get("operator.answers")
    where = [table.source] if table is not None and table.ok and table.source else []
    where += ["--answer"] if answers is not None and answers.ok and answers.value else []
    # The node's own busbw (an --answer measured_busbw= against the node's ports) is the trunk's to judge
    # (ib/roce at_hardware_limit on node.busbw); this fact speaks for a pasted table only.
    job = inputs.get("log.job")
    pasted = ((job.value or {}).get("bandwidth") or {}) if job is not None and job.ok and isinstance(job.value, dict) else {}
    measured_from = "table" if pasted.get("measured_gbs") is not None or pasted.get("unjudged") else "answer"
    # A table that is not one run (bw verdict `unjudged`, evidence/tests_table) has no scope to speak for.
    scope = None if bw.get("verdict") == "unjudged" else "one_host" if one_host else "nodes"
    return Observation("", {"scope": scope, "measured_from": measured_from,
                            "hardware": bw.get("hardware") or "unknown",
                            "limit": bw.get("limit"), "measured_gbs": bw.get("measured_gbs"),
                            "ceiling_gbs": ceiling.get("ceiling_gbs"),
                            "note": bw.get("note") if one_host else bw.get("hardware_note")}, OK, "; ".join(where))


DERIVATIONS = {"job_ceiling": job_ceiling}
