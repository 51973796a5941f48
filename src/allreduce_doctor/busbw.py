"""The measured all-reduce bus bandwidth beside what the NICs can carry, as one number and a ratio.

A paste's nccl-tests table (log.job.bandwidth) or an operator's answer (node.busbw) gives the
measured busbw; the pasted or read NICs (NICs per node x line rate) give what it can reach. The
comparison is domain.busbw_verdict's; this module only gathers it for the report and words it.
"""

from __future__ import annotations

from allreduce_doctor import busbw_nodes, ceiling_node
from allreduce_doctor.busbw_ceiling import ONE_HOST, assess, topology, words
from allreduce_doctor.domain import allreduce_algos, busbw_above_reason, busbw_verdict
from allreduce_doctor.observations import Observations
from allreduce_doctor.probes import derive_ceiling

__all__ = ["ONE_HOST", "above_note", "phrase", "summary"]


def _value(observations: Observations, fact: str) -> dict:
    obs = observations.get(fact)
    return obs.value if obs.ok and isinstance(obs.value, dict) else {}


def _inputs(observations: Observations) -> tuple[dict, dict, dict, list[str], dict, dict]:
    """(log.job, the main nccl-tests run, gpu.nvlink, the GPUs' names, NCCL's environment, the answers)."""
    job, nvlink = _value(observations, "log.job"), _value(observations, "gpu.nvlink")
    run = _value(observations, "log.tests").get("main") or {}
    names = list(run.get("gpu_models") or []) + list(_value(observations, "log.host").get("gpu_models") or [])
    names += ceiling_node.gpu_names(observations)
    env = _value(observations, "nccl.env").get("vars") or _value(observations, "log.env").get("vars") or {}
    return job, run, nvlink, names, env, _value(observations, "operator.answers")


def across_nodes(observations: Observations, measured: float, nics: int | None, line_gbps: float | None) -> dict:
    """{hardware, limit, hardware_note, ceiling} of a run across nodes against the inter-node ceiling (busbw_nodes)."""
    job, run, _nvlink, names, env, answers = _inputs(observations)
    node = ceiling_node.parts(observations)  # the node's own GPUs, NIC PCIe links and GPUDirect
    topo, from_ = busbw_nodes.topology(names, job.get("ranks_per_node") or run.get("ranks_per_host") or node["gpus"],
                                       job.get("nodes"), nics, line_gbps, (job.get("gdr") or {}).get("state"),
                                       env, answers, node)
    a = busbw_nodes.assess(measured, topo)
    known = a["hardware"] != "unknown"
    return {"hardware": a["hardware"], "limit": a["resource"] if known else None,
            "hardware_note": busbw_nodes.words(measured, a),
            "ceiling": {k: a[k] for k in ("ceiling_gbs", "bound_gbs", "basis", "sources", "asks", "nodes", "gdr")}
            | {"nics": topo.nics, "nic_gbps": topo.nic_gbps, "gpu_model": topo.gpu_model} | from_}


def one_host(observations: Observations, measured: float) -> dict:
    """{expected_gbs, ratio, note, hardware, limit, ceiling} of a one-host run: its busbw against what the GPUs'
    links carry (busbw_ceiling), with the GPU model from the table's device names, a pasted or read
    `nvidia-smi nvlink -s`, or --answer gpu_model=."""
    job, run, nvlink, names, env, answers = _inputs(observations)
    topo, source = topology(names, job.get("ranks_per_node") or run.get("ranks_per_host"), env, answers, nvlink)
    nvls = _value(observations, "log.nccl").get("nvls_channels") or []
    a = assess(measured, topo) | {"nvls_used": max(nvls) > 0 if nvls else None}
    known = a["hardware"] != "unknown"
    ceiling = {k: a[k] for k in ("gpu_model", "gpus", "ceiling_gbs", "bound_gbs", "basis", "ring_gbs", "sources",
                                 "nvls_used")}
    return {"expected_gbs": a["ceiling_gbs"] if known else None, "ratio": a["ratio"] if known else None,
            "note": words(measured, a), "hardware": a["hardware"], "limit": a["resource"] if known else None,
            "ceiling": ceiling | {"model_from": source, "asks": a["asks"]}}


def summary(observations: Observations) -> dict | None:
    """{measured_gbs, expected_gbs, ratio, verdict, nics, line_gbps, basis} when busbw was measured, with
    {above_line_rate, note} when it is clearly above what the NICs carry (never a fault: above_note); a one-host
    run's expected_gbs is what its GPUs' links carry (one_host), or None where that is not known."""
    job = observations.get("log.job")
    job_value = job.value if job.ok and isinstance(job.value, dict) else {}
    pasted = job_value.get("bandwidth") or {}
    node = observations.get("node.busbw")
    read = node.value if node.ok and isinstance(node.value, dict) else {}
    measured = pasted.get("measured_gbs") if pasted.get("measured_gbs") is not None else read.get("measured_gbs")
    if pasted.get("unjudged") and measured is None:  # the paste's table is not judged (tests_table: item 5)
        return {"measured_gbs": None, "expected_gbs": None, "ratio": None, "verdict": "unjudged", "hardware": "unknown",
                "limit": None, "nics": pasted.get("nics"), "line_gbps": pasted.get("line_gbps"),
                "basis": "the pasted nccl-tests table", "note": pasted["unjudged"], "hardware_note": pasted["unjudged"]}
    if measured is None:
        return None
    nics, line_gbps, expected = pasted.get("nics"), pasted.get("line_gbps"), pasted.get("expected_gbs")
    if not expected and read.get("nics") and read.get("line_gbs"):  # the NICs of the node read, not the paste
        nics, expected = read["nics"], read["line_gbs"]
        line_gbps = round(expected * 8 / nics, 1)
    basis = pasted.get("basis") or "the operator's answer (measured_busbw)"
    if pasted.get("verdict") == "intra_node" and pasted.get("measured_gbs") is not None:
        return {"measured_gbs": measured, "verdict": "intra_node", "nics": nics, "line_gbps": line_gbps,
                "basis": basis} | one_host(observations, measured) | small_only(basis, "note")
    ratio, verdict = busbw_verdict(measured, expected, from_peak=not basis.startswith("average"))
    out = {"measured_gbs": measured, "expected_gbs": expected or None, "ratio": ratio, "verdict": verdict,
           "nics": nics, "line_gbps": line_gbps, "basis": basis}
    env = observations.get("nccl.env")
    algo = ((env.value or {}).get("vars") or {}).get("NCCL_ALGO") if env.ok and isinstance(env.value, dict) else None
    nodes = job_value.get("nodes") if pasted.get("measured_gbs") is not None else None  # the table's own run
    return out | above_note(ratio, nodes, algo) | across_nodes(observations, measured, nics, line_gbps) \
        | small_only(basis, "hardware_note")


# Sizes below 32 MiB are latency-bound (evidence/tests_table.LARGE): a table without a large size gives only the
# average over all sizes, which no ceiling judges (issue 28, item 5: no verdict, one sentence).
SMALL_ONLY = ("the table has no message size from 32 MiB up, and small sizes are latency-bound: it is not judged "
              "against a ceiling; rerun all_reduce_perf -b 8 -e 8G -f 2 for the bandwidth at large sizes")


def small_only(basis: str, key: str) -> dict:
    """{hardware: unknown, limit, KEY: SMALL_ONLY} when the busbw is an average over small sizes only, {} else."""
    if not str(basis).startswith("average"):
        return {}
    return {"hardware": "unknown", "limit": None, key: SMALL_ONLY}


def above_note(ratio: float | None, nodes: int | None, algo: str | None) -> dict:
    """{above_line_rate: reason, note} for a busbw clearly above NICs x line rate (domain.busbw_above_reason),
    worded in signatures/report_words.yaml (busbw_above_notes); {} otherwise."""
    reason = busbw_above_reason(ratio, nodes, allreduce_algos(algo))
    if reason is None:
        return {}
    from allreduce_doctor.evidence.report_words_table import table  # read only for a busbw above the line rate

    return {"above_line_rate": reason, "note": table().busbw_above_notes[reason]}


def phrase(bw: dict, found_cause: bool) -> str:
    """One line: the number, what the NICs carry and the ratio; a slow run without a cause says so."""
    if bw.get("verdict") == "unjudged":
        return f"busbw is not judged: {bw['note']}"
    text = f"busbw is {bw['measured_gbs']:g} GB/s ({bw.get('basis')})"
    if bw.get("verdict") == "intra_node":
        return f"{text}: {bw['note']}"
    if bw.get("expected_gbs"):
        carry = f"{bw['nics']}x{bw['line_gbps']:g}G" if bw.get("nics") and bw.get("line_gbps") else "the NICs"
        text += f", about {bw['ratio'] * 100:.0f}% of what {carry} can carry ({bw['expected_gbs']:g} GB/s)"
    elif bw.get("hardware") not in ("at_limit", "below"):  # --answer nics_per_node= / nic_rate_gbps= tell it too
        text += "; what the NICs can carry is not known: paste `ibstat` (or diagnose on the node) to compare"
    if bw.get("note"):
        text += f": {bw['note']}"
    elif bw.get("hardware") in ("at_limit", "below") and bw.get("hardware_note"):  # the ceiling across nodes
        text += f"; against the ceiling: {bw['hardware_note']}" if bw.get("expected_gbs") else f": {bw['hardware_note']}"
    if (bw.get("verdict") in ("below", "unclear") or bw.get("hardware") == "below") and not found_cause:
        text += ": cause not found in this evidence; paste NCCL_DEBUG=INFO output of the run and `ibstat` of a node"
    return text


derive_ceiling.SUMMARY["busbw"] = summary  # job.ceiling, the walk's view of the same decision
