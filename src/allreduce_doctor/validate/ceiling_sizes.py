"""validate's own all_reduce_perf judged per size against the ceiling model (issue 28, item 3).

busbw is what nccl-tests prints: algbw x 2(n-1)/n for all-reduce, "comparable to the hardware's peak bandwidth"
(NVIDIA/nccl-tests doc/PERFORMANCE.md; docs/ceilings.md derives the ceilings from it). The topology is what the run
and the nodes' bundles show: the table's device names and ranks per host, the node count, each node's NICs, their
line rate and PCIe link (validate/record.node_figures), the most common value over the nodes. Across nodes
busbw_nodes gives the ceiling; on one host, busbw_ceiling (the GPUs' own links: the NICs carry nothing there).
Each size from 32 MiB up is judged by ceiling.verdict_of, the rule the Bandwidth line and `diagnose --format csv`
use. Smaller sizes are latency-bound (evidence/tests_table.LARGE, from NCCL's src/graph/tuning.cc time = latency +
size / bandwidth): no bandwidth ceiling judges them, and a run without a large size gets no ceiling verdict.
"""

from __future__ import annotations

from collections import Counter

from allreduce_doctor import busbw_ceiling, busbw_nodes
from allreduce_doctor.busbw import SMALL_ONLY
from allreduce_doctor.ceiling import verdict_of
from allreduce_doctor.evidence.tests_table import LARGE

LATENCY_BOUND = "latency_bound"
NOT_JUDGED = "not judged: latency-bound below 32 MiB"


def _common(figs: list[dict], key: str):
    seen = Counter(tuple(f[key]) if isinstance(f.get(key), list) else f.get(key) for f in figs if f.get(key))
    return seen.most_common(1)[0][0] if seen else None


def _busbw(row: dict) -> float:
    return max(h["busbw"] for h in (row["out_of_place"], row["in_place"]) if h)


def assess(run: dict, figs: list[dict], nodes: int, ranks_per_node: int | None) -> dict:
    """The ceiling's assess of the run's peak from 32 MiB up (busbw_nodes, or busbw_ceiling on one host), with its
    words as `note`; hardware `unknown` and busbw.SMALL_ONLY as the note when no size is that large."""
    names, per_node = list(run.get("gpu_models") or []), run.get("ranks_per_host") or ranks_per_node
    count = run.get("nodes") or nodes
    if count == 1:
        topo, _ = busbw_ceiling.topology(names, per_node, {}, {})
        judge, words = busbw_ceiling.assess, busbw_ceiling.words
    else:
        pcie = _common(figs, "nic_pcie") or (None, None)
        answers = {"nic_pcie_gen": pcie[0], "nic_pcie_width": pcie[1]} if pcie[0] else {}
        topo, _ = busbw_nodes.topology(names, per_node, count, _common(figs, "nics"), _common(figs, "line_gbps"),
                                       None, {}, answers)
        judge, words = busbw_nodes.assess, busbw_nodes.words
    measured = max((_busbw(r) for r in run.get("table") or [] if r["size"] >= LARGE), default=None)
    a = judge(measured or 0.0, topo)
    if measured is None:
        return a | {"hardware": "unknown", "note": SMALL_ONLY}
    return a | {"note": words(measured, a)}


def row(size: int, busbw: float, a: dict) -> tuple[str, str]:
    """(verdict, what it is judged against) of one size: latency_bound below 32 MiB, else at_limit | below |
    above_hardware | unknown against the ceiling."""
    if size < LARGE:
        return LATENCY_BOUND, NOT_JUDGED
    against = f"about {a['ceiling_gbs']:g} GB/s ({a['resource']})" if a.get("ceiling_gbs") else "unknown"
    return verdict_of(busbw, a.get("ceiling_gbs"), a.get("bound_gbs"))[0], against
