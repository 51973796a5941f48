"""A run across nodes judged against the inter-node ceiling (ceiling.inter_node, docs/ceilings.md "Across nodes").

The topology comes from the evidence and the operator's answers: NICs per node and their rate (NCCL's `NET/IB :
Using` lines, a pasted `ibstat`, the node's ports read, or `--answer nics_per_node=` / `nic_rate_gbps=`), each
NIC's PCIe link (`--answer nic_pcie_gen=` / `nic_pcie_width=`), GPUDirect RDMA (the log's `/GDRDMA`, or `--answer
gdr=`), the GPUs (the table's device names, `--answer gpu_model=`) for the node's own links, the node count and
NCCL_ALGO. What none of them shows stays unknown, and the sentence says which answer or paste decides it.
"""

from __future__ import annotations

from allreduce_doctor.busbw_ceiling import _int, _model, _yes_no
from allreduce_doctor.ceiling import (
    ANSWER_GDR,
    ANSWER_NIC_PCIE_GEN,
    ANSWER_NIC_PCIE_WIDTH,
    ANSWER_NIC_RATE,
    ANSWER_NICS,
    Topology,
    inter_node,
    intra_node,
    judge,
)
from allreduce_doctor.ceiling_node import ASK_NIC_PCIE
from allreduce_doctor.domain import BUSBW_ABOVE_LINE, IN_NETWORK_ALGOS, allreduce_algos

# What holds the network's share of a ring back, first what the evidence can show (NCCL's net transport:
# src/transport/net_ib.cc; GPUDirect: the `/GDRDMA` of each NET connection, NVIDIA/nccl#412 for host staging).
HOLD_BACK_NET = ("ports down or below their rate (`ibstat`), fewer NICs in use than the node has (NCCL_IB_HCA, the "
                 "`NET/IB : Using` line), GPUDirect RDMA off (no `/GDRDMA` on the NET lines), a NIC's PCIe link "
                 "trained low (`lspci -vvv` LnkSta), or loss and pauses on the fabric (RoCE: PFC, ECN)")
STAGING = ("GPUDirect RDMA is off (no `/GDRDMA` on the NET lines, or neither nvidia-peermem nor DMA-BUF on the "
           "node): every byte is staged through host memory")


def _float(text) -> float | None:
    try:
        return float(str(text).strip().split()[0])
    except (TypeError, ValueError, IndexError):
        return None


def topology(names: list[str], per_node: int | None, nodes: int | None, nics: int | None, line_gbps: float | None,
             gdr_state: str | None, env: dict, answers: dict, node: dict | None = None) -> tuple[Topology, dict]:
    """(Topology, where each part came from) of a run across nodes; `node` is what the node's own facts show
    (ceiling_node.parts), below the answers and the log."""
    node = node or {}
    key, model_from = _model(names, answers)
    from_ = {"model_from": model_from, "nics_from": "the evidence" if nics else None,
             "nic_pcie_from": node.get("nic_pcie_from")}
    if _int(answers.get(ANSWER_NICS)):
        nics, from_["nics_from"] = _int(answers.get(ANSWER_NICS)), f"--answer {ANSWER_NICS}"
    if _float(answers.get(ANSWER_NIC_RATE)):
        line_gbps = _float(answers.get(ANSWER_NIC_RATE))
    gdr = _yes_no(answers.get(ANSWER_GDR))
    if gdr is None:
        gdr = {"on": True, "off": False}.get(str(gdr_state or ""), node.get("gdr"))
    pcie_gen, pcie_width = node.get("nic_pcie_gen"), node.get("nic_pcie_width")
    if _int(answers.get(ANSWER_NIC_PCIE_GEN)):
        pcie_gen, pcie_width = _int(answers.get(ANSWER_NIC_PCIE_GEN)), _int(answers.get(ANSWER_NIC_PCIE_WIDTH))
        from_["nic_pcie_from"] = f"--answer {ANSWER_NIC_PCIE_GEN}"
    elif _int(answers.get(ANSWER_NIC_PCIE_WIDTH)):
        pcie_width, from_["nic_pcie_from"] = _int(answers.get(ANSWER_NIC_PCIE_WIDTH)), f"--answer {ANSWER_NIC_PCIE_WIDTH}"
    nvls = env.get("NCCL_NVLS_ENABLE")
    topo = Topology(gpu_model=key, gpus_per_node=per_node, nodes=nodes, nics=nics, nic_gbps=line_gbps,
                    nic_pcie_gen=pcie_gen, nic_pcie_width=pcie_width, gdr=gdr,
                    algos=allreduce_algos(env.get("NCCL_ALGO")),
                    nvls_enabled=None if nvls is None else str(nvls).strip() != "0")
    return topo, from_


def assess(measured: float, topo: Topology) -> dict:
    """{hardware, ceiling_gbs, bound_gbs, resource, ratio, basis, asks, nodes}: the busbw against the ceiling."""
    intra = intra_node(topo) if topo.gpu_model else None
    result = inter_node(topo, intra)
    if intra is None:
        result.unknown += [] if not result.ceilings else [
            "the GPU model, for the node's own links: the nccl-tests `#  Rank ... device` lines, or --answer gpu_model="]
    if topo.nic_pcie_gen is None and result.ceilings:
        result.unknown.append(ASK_NIC_PCIE)
    verdict = judge(measured, result)
    best = result.best
    bounding = next((c for c in result.ceilings if c.bound_gbs == verdict["bound_gbs"]), None)
    capping = best or bounding
    return {"bound_basis": bounding.basis if bounding else None,
            "hardware": verdict["verdict"], "ceiling_gbs": verdict["ceiling_gbs"], "bound_gbs": verdict["bound_gbs"],
            "resource": verdict["resource"], "ratio": verdict["ratio"], "basis": capping.basis if capping else None,
            "sources": sorted({s for c in result.ceilings for s in c.sources}), "asks": result.unknown,
            "nodes": topo.nodes, "gdr": topo.gdr, "algos": sorted(topo.algos) if topo.algos is not None else None,
            "pcie_read": topo.nic_pcie_gen is not None}


def words(measured: float, a: dict) -> str:
    """The sentence for a run across nodes: at the limit, below it by how much, past what can be, or not known."""
    across = f"across {a['nodes']} nodes" if a.get("nodes") else "across nodes"
    verdict = a["hardware"]
    if verdict == "at_limit" and measured > a["ceiling_gbs"] * BUSBW_ABOVE_LINE:  # within the bound: the tree
        return (f"{measured:g} GB/s {across} is past what a ring over {a['resource']} carries (about "
                f"{a['ceiling_gbs']:g} GB/s: {a['basis']}) yet within {a['bound_gbs']:g} GB/s ({a['bound_basis']}): "
                "at the hardware's limit, not a fault; to measure the network, rerun with NCCL_ALGO=Ring")
    if verdict == "at_limit":
        return (f"{a['resource']}: {measured:g} of about {a['ceiling_gbs']:g} GB/s {across} ({a['basis']}): at the "
                "hardware's limit, not a fault")
    if verdict == "below":
        first = STAGING + "; then " if a.get("gdr") is False else ""
        return (f"{a['resource']}: {measured:g} of about {a['ceiling_gbs']:g} GB/s {across} ({a['basis']}), "
                f"{(1 - a['ratio']) * 100:.0f}% below what it should carry; what can hold it back: {first}"
                f"{HOLD_BACK_NET}" + ("" if a.get("pcie_read") else
                                      f"; not known: {ASK_NIC_PCIE} (a slot that carries less than its "
                                      "port lowers this ceiling)"))
    if verdict == "above_hardware":
        algos = set(a.get("algos") or IN_NETWORK_ALGOS)
        sharp = (", or an in-network reduction (IB SHARP / CollNet, NVLS) the evidence does not show"
                 if algos & IN_NETWORK_ALGOS else "")
        return (f"{measured:g} GB/s is more than {a['resource']} can carry {across} (at most {a['bound_gbs']:g} GB/s: "
                f"{a['basis']}): a measurement that cannot be on the NICs it shows; likely algbw read as busbw, the "
                f"GPUs of one host counted as nodes, or more or faster NICs per node than the evidence shows{sharp}")
    asks = "; ".join(a.get("asks") or []) or "no figure for this hardware in the ceiling table"
    return f"what these nodes' NICs and links carry is not known: {asks}"
