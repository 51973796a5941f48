"""A one-host run's busbw against what its GPUs' links can carry (ceiling.py), and the sentence that says it.

The topology comes from what the evidence shows: the nccl-tests rank lines' device names (`#  Rank 0 ... device
0 [0x19] NVIDIA H100 80GB HBM3`), a pasted or read `nvidia-smi nvlink -s` (names and active links), the ranks per
host, NCCL_ALGO / NCCL_NVLS_ENABLE, and the operator's `--answer gpu_model=` / `nvswitch=` / `nvlink_links=` /
`pcie_gen=`. What none of them shows stays unknown, and the sentence says what would tell.
"""

from __future__ import annotations

from allreduce_doctor.ceiling import (
    ANSWER_LINKS,
    ANSWER_MODEL,
    ANSWER_NVSWITCH,
    ANSWER_PCIE_GEN,
    Topology,
    ceilings,
    judge,
    model_key,
)
from allreduce_doctor.domain import allreduce_algos

# Ranks of one host reach each other over P2P (NVLink, PCIe) or SHM before the network (NCCL transport.cc
# tries p2p, shm, then net): the NICs' rate neither bounds nor explains a one-host run's busbw.
ONE_HOST_WHY = "every rank of this run is on one host: NVLink or PCIe (P2P, SHM) carry it, not the NICs"
ONE_HOST = (ONE_HOST_WHY + ", so their line rate is no yardstick for it; to measure the network, run all_reduce_perf "
            "across two or more nodes")
# What holds NVLink or PCIe back on one host, worth a look before anything else (NCCL's P2P transport:
# src/transport/p2p.cc; NVLS needs the fabric manager and multicast: NCCL 2.17+ release notes).
HOLD_BACK = ("links down or slower than their rate (`nvidia-smi nvlink -s`), the fabric manager (`nvidia-smi -q`, "
             "Fabric), P2P turned off (NCCL_P2P_DISABLE, NCCL_P2P_LEVEL) or the IOMMU/ACS in the way of peer copies")

# Why a communicator gets no NVLS channels: transport/nvls.cc ncclNvlsInit (v2.17.1-1 to v2.27.7-1) leaves them 0
# when NCCL_NVLS_ENABLE=0, with two GPUs or fewer, or when the GPU reports no multicast support (the fabric manager).
NVLS_OFF = ("NCCL_NVLS_ENABLE=0, two GPUs or fewer, or no multicast support (`NVLS multicast support is not "
            "available`: the fabric manager, the driver, CUDA 12.1 or later)")


def _int(text) -> int | None:
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


def _yes_no(text) -> bool | None:
    value = str(text or "").strip().lower()
    return True if value in ("yes", "true", "1") else False if value in ("no", "false", "0") else None


def _model(names: list[str], answers: dict) -> tuple[str | None, str | None]:
    """(table key, where it came from); names of two models (a mixed paste) decide nothing."""
    if answers.get(ANSWER_MODEL):
        return model_key(answers[ANSWER_MODEL]), f"--answer {ANSWER_MODEL}"
    # "NVIDIA Graphics Device" (a driver that does not know the part yet: GB200 in coreweave/nccl-tests#43) names
    # no model, and no other one either; any other name outside the table makes the mix unknown.
    keys = {model_key(n) for n in names if n and "graphics device" not in n.lower()}
    if len(keys) == 1 and None not in keys:
        return keys.pop(), "the GPUs' names"
    return None, None


def _active_links(nvlink: dict | None) -> int | None:
    """The fewest active NVLink links of any GPU in `nvidia-smi nvlink -s` (parsers/nvidia_smi.py), None unread."""
    gpus = (nvlink or {}).get("gpus") or {}
    counts = [sum(v is not None for v in g.get("links", {}).values()) for g in gpus.values() if g.get("links")]
    if not counts:
        return 0 if (nvlink or {}).get("all_inactive") and gpus else None
    return min(counts)


def topology(names: list[str], per_node: int | None, env: dict, answers: dict,
             nvlink: dict | None = None) -> tuple[Topology, str | None]:
    key, source = _model(names, answers)
    links = _int(answers.get(ANSWER_LINKS))
    if links is None:
        links = _active_links(nvlink)
    nvls = env.get("NCCL_NVLS_ENABLE")
    topo = Topology(gpu_model=key, gpus_per_node=per_node, nodes=1, nvswitch=_yes_no(answers.get(ANSWER_NVSWITCH)),
                    nvlink_links=links, pcie_gen=_int(answers.get(ANSWER_PCIE_GEN)),
                    algos=allreduce_algos(env.get("NCCL_ALGO")),
                    nvls_enabled=None if nvls is None else str(nvls).strip() != "0")
    return topo, source


def assess(measured: float, topo: Topology) -> dict:
    """{hardware: at_limit | below | above_hardware | unknown, ceiling_gbs, bound_gbs, resource, ratio, basis,
    sources, ring_gbs, asks}: the measured busbw against the ceiling of the run's hardware."""
    result = ceilings(topo)
    verdict = judge(measured, result)
    best = result.best
    ring = next((c.gbs for c in result.ceilings if c.algo == "ring"), None)
    sources = sorted({s for c in result.ceilings for s in c.sources})
    capping = best or next((c for c in result.ceilings if c.bound_gbs == verdict["bound_gbs"]), None)
    return {"hardware": verdict["verdict"], "ceiling_gbs": verdict["ceiling_gbs"], "bound_gbs": verdict["bound_gbs"],
            "resource": verdict["resource"], "ratio": verdict["ratio"], "basis": capping.basis if capping else None,
            "ring_gbs": ring if best is not None and best.algo != "ring" else None, "sources": sources,
            "asks": result.unknown, "gpu_model": topo.gpu_model, "gpus": topo.gpus_per_node}


def words(measured: float, a: dict) -> str:
    """The sentence for a one-host run: at the limit, below it by how much, past what can be, or not known."""
    what = f"{a['gpus']}x {a['gpu_model']}" if a.get("gpu_model") else "this host"
    verdict = a["hardware"]
    if verdict == "at_limit":
        return (f"{ONE_HOST_WHY}. {a['resource']}: {measured:g} of about {a['ceiling_gbs']:g} GB/s on {what} "
                f"({a['basis']}): at the hardware's limit, not a fault")
    if verdict == "below":
        text = (f"{ONE_HOST_WHY}. {a['resource']}: {measured:g} of about {a['ceiling_gbs']:g} GB/s on {what} "
                f"({a['basis']}), {(1 - a['ratio']) * 100:.0f}% below what it should carry")
        ring = a.get("ring_gbs")
        if ring and a.get("nvls_used") is False:  # the log's `0 nvls channels` (parsers/nccl_log.py CHANNELS_RE)
            text += f"; NVLS is not in use (the log's `0 nvls channels`: {NVLS_OFF})"
            return text + (f", and {measured:g} GB/s is the ring's figure ({ring:g} GB/s)" if measured >= 0.85 * ring
                           else f"; what can hold {a['resource']} back: {HOLD_BACK}")
        if ring and measured >= 0.85 * ring:
            return (text + f"; that is the ring's figure ({ring:g} GB/s): NVLS is likely not in use (NCCL 2.17 or "
                    "later, NCCL_NVLS_ENABLE, NCCL_ALGO, the fabric manager decide it)")
        return text + f"; what can hold {a['resource']} back: {HOLD_BACK}"
    if verdict == "above_hardware":
        return (f"{ONE_HOST_WHY}, and {measured:g} GB/s is more than {a['resource'] or 'its links'} can carry on "
                f"{what} (at most {a['bound_gbs']:g} GB/s): a measurement that cannot be; likely algbw read as "
                "busbw, the ranks of several hosts counted as one, or GPUs other than the names say")
    if a.get("bound_gbs") and not a.get("asks"):  # PCIe, xGMI: a bound, no reachable figure to judge against
        return (f"{ONE_HOST}; {a['resource']} carries at most {a['bound_gbs']:g} GB/s on {what} ({a['basis']}): "
                f"{measured:g} GB/s is within it, and below the bound it is not judged")
    asks = "; ".join(a.get("asks") or []) or "no figure for this hardware in the ceiling table"
    return f"{ONE_HOST}; what the GPUs' links carry is not known: {asks}"
