"""What the hardware at hand can carry for all-reduce busbw: the speed-of-light model (issue 28).

Pure: given the parts of a topology that are known (Topology), it returns the ceiling per algorithm NCCL can
pick (ring, NVLS, the tree's two-node gain), the resource that caps each, and the figures' sources, all from
hardware/ceilings.yaml. A part that is not known stays unknown: the result says what would decide it (a paste
or an `--answer`), never a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from allreduce_doctor.domain import TREE_GAIN_TWO_NODES

ANSWER_MODEL = "gpu_model"
ANSWER_NVSWITCH = "nvswitch"
ANSWER_LINKS = "nvlink_links"
ANSWER_PCIE_GEN = "pcie_gen"
ANSWER_NICS = "nics_per_node"
ANSWER_NIC_RATE = "nic_rate_gbps"
ANSWER_NIC_PCIE_GEN = "nic_pcie_gen"
ANSWER_NIC_PCIE_WIDTH = "nic_pcie_width"
ANSWER_GDR = "gdr"


@lru_cache(maxsize=1)
def table() -> dict:
    import yaml

    from allreduce_doctor.resources import hardware_file

    return yaml.safe_load(hardware_file("ceilings.yaml").read_text(encoding="utf-8"))


def _name_re(name: str) -> re.Pattern:
    # A name matches as a whole token run: "H20" is not "H200", "B200" is not "GB200".
    return re.compile(r"(?<![A-Za-z0-9])" + re.escape(name).replace(r"\ ", r"[\s_-]") + r"(?![A-Za-z0-9])", re.IGNORECASE)


def model_key(text: str | None) -> str | None:
    """'NVIDIA H100 80GB HBM3' -> 'H100-SXM'; a table key given as is; None when no model's name is in it.
    The longest name wins, so 'H200 NVL' or 'H100 NVL' (not in the table) match nothing on a shorter name."""
    if not text:
        return None
    models = table()["models"]
    for key in models:
        if str(text).strip().lower() == key.lower():
            return key
    if re.search(r"(?<![A-Za-z0-9])NVL(?![A-Za-z0-9])", str(text)):  # the NVL cards' bridges are not modelled
        return None
    hits = [(len(n), key) for key, m in models.items() for n in m["names"] if _name_re(n).search(str(text))]
    return max(hits)[1] if hits else None


def model_keys() -> list[str]:
    return list(table()["models"])


@dataclass(frozen=True)
class Topology:
    gpu_model: str | None = None  # a table key (model_key)
    gpus_per_node: int | None = None
    nodes: int | None = 1
    nvswitch: bool | None = None  # None: the model's board decides where it can (its `nvswitch` rule)
    nvlink_links: int | None = None  # active NVLink links per GPU, when read (nvidia-smi nvlink -s)
    pcie_gen: int | None = None  # the GPUs' PCIe generation, where no NVLink joins them
    pcie_width: int | None = None
    nics: int | None = None  # NICs per node and their line rate, for more than one node
    nic_gbps: float | None = None
    nic_pcie_gen: int | None = None  # each NIC's PCIe link (lspci LnkSta, --answer nic_pcie_gen= / nic_pcie_width=)
    nic_pcie_width: int | None = None
    gdr: bool | None = None  # GPUDirect RDMA on the NET connections (NCCL's `/GDRDMA`); False: staged through host
    algos: frozenset[str] | None = None  # domain.allreduce_algos of NCCL_ALGO (None: NCCL's choice)
    nvls_enabled: bool | None = None  # NCCL_NVLS_ENABLE as set (None: NCCL's default, on where supported)


@dataclass(frozen=True)
class Ceiling:
    algo: str  # ring | nvls | tree
    resource: str  # "NVLink", "NVLink (NVLS)", "PCIe", "NICs", "NICs (tree)"
    gbs: float | None  # what NCCL reaches at large sizes (None: no figure known)
    bound_gbs: float | None  # what the hardware can never pass with this algorithm
    basis: str
    sources: tuple[str, ...] = ()


@dataclass
class Result:
    ceilings: list[Ceiling] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # what would decide the parts not known

    @property
    def best(self) -> Ceiling | None:
        known = [c for c in self.ceilings if c.gbs is not None]
        return max(known, key=lambda c: c.gbs or 0.0) if known else None

    @property
    def bound_gbs(self) -> float | None:
        bounds = [c.bound_gbs for c in self.ceilings if c.bound_gbs is not None]
        return max(bounds) if bounds else None


def _allowed(topo: Topology, algo: str) -> bool:
    if algo == "nvls" and topo.nvls_enabled is False:
        return False
    return topo.algos is None or algo in topo.algos or (algo == "nvls" and "nvlstree" in topo.algos)


def _nvswitch(topo: Topology, model: dict) -> bool | None:
    if topo.nvswitch is not None:
        return topo.nvswitch
    rule = model.get("nvswitch")
    if rule == "always":
        return True
    if rule == "never":
        return False
    if isinstance(rule, dict) and topo.gpus_per_node in (rule.get("gpus") or []):
        return True  # the model's boards of that many GPUs all carry NVSwitch (the table's sources)
    return None


def _nvswitch_ceilings(topo: Topology, model: dict) -> list[Ceiling]:
    n, links = topo.gpus_per_node or 0, topo.nvlink_links or model["links"]
    line = round(links * model["link_gbs"], 1)
    nccl = round(links * model["nccl_link_gbs"], 1) if model.get("nccl_link_gbs") else None
    src = tuple(model["sources"])
    out = [Ceiling("ring", "NVLink", nccl, line,
                   f"{links} {model['interconnect']} links x {model['nccl_link_gbs']} GB/s (NCCL's figure; "
                   f"line rate {model['link_gbs']:g}) per GPU through NVSwitch", src)]
    nvls = model.get("nvls")
    if isinstance(nvls, dict) and n >= 2 and _allowed(topo, "nvls"):
        figure = nvls.get(n) or {}
        bound = round(line * 2 * (n - 1) / n, 1)
        basis = (f"NVLS on {n} GPUs: {figure['busbw_gbs']:g} GB/s published" if figure else
                 f"NVLS on {n} GPUs: no published figure; at most 2(n-1)/n x the line rate")
        out.append(Ceiling("nvls", "NVLink (NVLS)", figure.get("busbw_gbs"), bound, basis,
                           tuple(dict.fromkeys(src + ((figure["source"],) if figure else ())))))
    return out


def _pcie_ceiling(topo: Topology, model: dict) -> Ceiling | None:
    gen = topo.pcie_gen or (model.get("pcie") or {}).get("gen")
    width = topo.pcie_width or (model.get("pcie") or {}).get("width") or 16
    rate = table()["pcie"].get(gen)
    if not rate:
        return None
    # A bound only: past the GPU's own link the path (a PCIe switch, the CPU's root complex, the link between
    # sockets) decides, "usually ... the bandwidth your CPU and memory can deliver" (sjeaugey, NVIDIA/nccl#1639).
    share = width / 16
    return Ceiling("ring", "PCIe", None, round(rate["raw_gbs"] * share, 1),
                   f"the GPU's PCIe Gen{gen} x{width} link, {rate['gts']} GT/s ({rate['nccl_gbs'] * share:g} GB/s in "
                   "NCCL's model); what a path through a PCIe switch or the CPU carries below that is not modelled",
                   ("nccl_topo_cc", "pcie_spec"))


def _direct_ceilings(topo: Topology, model: dict) -> tuple[list[Ceiling], list[str]]:
    """No NVSwitch: two GPUs on an NVLink bridge, or a ring that crosses PCIe."""
    n = topo.gpus_per_node or 0
    if model["vendor"] == "amd":
        line = round(model["links"] * model["link_gbs"], 1)
        return [Ceiling("ring", "xGMI", None, line, f"{model['links']} xGMI links x {model['link_gbs']:g} GB/s; "
                        "RCCL's own effective figure is not in the table", tuple(model["sources"]))], []
    if n == 2 and topo.nvlink_links:
        links = topo.nvlink_links
        return [Ceiling("ring", "NVLink", round(links * model["nccl_link_gbs"], 1),
                        round(links * model["link_gbs"], 1),
                        f"{links} NVLink links x {model['nccl_link_gbs']} GB/s between the pair", tuple(model["sources"]))], []
    if n == 2 and model["interconnect"].startswith("NVLink") and "bridge" in model["interconnect"]:
        ask = (f"whether an NVLink bridge joins the two GPUs: paste `nvidia-smi nvlink -s` or `nvidia-smi topo -m`, "
               f"or answer --answer {ANSWER_LINKS}=N (0 for none)")
        return [], [ask]
    pcie = _pcie_ceiling(topo, model)
    return ([pcie] if pcie else []), ([] if pcie else [f"the GPUs' PCIe generation: answer --answer {ANSWER_PCIE_GEN}=4"])


def intra_node(topo: Topology) -> Result:
    """The ceiling of a run whose ranks share one host."""
    models = table()["models"]
    if topo.gpu_model not in models:
        ask = (f"the GPU model: paste the nccl-tests header with its `#  Rank ... device` lines or `nvidia-smi -L`, "
               f"or answer --answer {ANSWER_MODEL}=H100-SXM (one of {', '.join(models)})")
        return Result(unknown=[ask])
    model = models[topo.gpu_model]
    if not topo.gpus_per_node or topo.gpus_per_node < 2:
        return Result(unknown=["the GPUs per node: a run of one rank moves nothing between GPUs"])
    if topo.nvlink_links == 0 and model["vendor"] == "nvidia":
        pcie = _pcie_ceiling(topo, model)
        return Result([pcie] if pcie else [])
    switch = _nvswitch(topo, model)
    if switch:
        ring = _nvswitch_ceilings(topo, model)
        return Result([c for c in ring if c.algo != "ring" or _allowed(topo, "ring") or len(ring) == 1])
    if switch is None:
        ask = (f"whether the {topo.gpus_per_node} GPUs sit on NVSwitch (an 8-GPU HGX board) or on direct NVLink "
               f"links: paste `nvidia-smi topo -m` or `nvidia-smi -q` (Fabric), or answer --answer {ANSWER_NVSWITCH}=yes")
        return Result(unknown=[ask])
    ceilings, unknown = _direct_ceilings(topo, model)
    return Result(ceilings, unknown)


def nic_gbs(topo: Topology) -> tuple[float, str]:
    """One NIC's GB/s each way and why: its line rate / 8, or its PCIe link where that carries less (a Gen4 x16
    slot, 31.5 GB/s, cannot feed a 400 Gb/s port: PCI-SIG rates, hardware/ceilings.yaml `pcie`)."""
    line = round((topo.nic_gbps or 0) / 8, 2)
    rate = table()["pcie"].get(topo.nic_pcie_gen) if topo.nic_pcie_gen else None
    if rate:
        width = topo.nic_pcie_width or 16
        pcie = round(rate["raw_gbs"] * width / 16, 2)
        if pcie < line:
            return pcie, (f"{topo.nic_gbps:g} Gb/s ports each capped by their PCIe Gen{topo.nic_pcie_gen} x{width} "
                          f"link ({pcie:g} GB/s each way)")
    return line, f"{topo.nic_gbps:g} Gb/s each ({line:g} GB/s)"


def inter_node(topo: Topology, intra: Result | None = None) -> Result:
    """More than one node (docs/ceilings.md derives it): with k rings, each leaving a node through one NIC, a ring
    all-reduce's busbw is bounded by the node's aggregate NIC bandwidth (NICs x the lower of line rate and each
    NIC's PCIe link), and by the node's own links where those carry less; NCCL's tree on exactly two nodes reports
    up to ~2x the network (domain.TREE_GAIN_TWO_NODES). Without GPUDirect RDMA the NICs still bound it, and the
    staging through host memory is the first thing that holds it back (the verdict says so)."""
    if not topo.nics or not topo.nic_gbps:
        return Result(unknown=[f"the NICs per node and their rate: paste `ibstat` of a node or NCCL_DEBUG=INFO "
                               f"`NET/IB : Using` lines, or answer --answer {ANSWER_NICS}=8 --answer "
                               f"{ANSWER_NIC_RATE}=400"])
    per, why = nic_gbs(topo)
    net = round(topo.nics * per, 1)
    staged = "; no GPUDirect RDMA: staged through host memory" if topo.gdr is False else ""
    resource = "NICs (host staging)" if topo.gdr is False else "NICs"
    src = ("nccl_tests_perf", "pcie_spec") if "PCIe" in why else ("nccl_tests_perf",)
    ceilings = [Ceiling("ring", resource, net, net, f"{topo.nics} NIC{'s' if topo.nics != 1 else ''} per node x {why}{staged}", src)]
    if topo.nodes in (None, 2) and _allowed(topo, "tree"):  # an unknown count may be two: the looser bound
        ceilings.append(Ceiling("tree", "NICs (tree)", None, round(net * TREE_GAIN_TWO_NODES, 1),
                                "NCCL's tree on two nodes: up to ~2x the network (NVIDIA/nccl#946)", src))
    intra = intra or Result()
    local = intra.best
    if local is not None and local.gbs is not None and local.gbs < net:
        ceilings[0] = Ceiling("ring", local.resource, local.gbs, local.bound_gbs,
                              f"{local.basis}, below the NICs' {net:g} GB/s", local.sources)
        if len(ceilings) > 1:  # the tree's gain is the network's: it cannot pass the node's own links either
            ceilings[1] = Ceiling("tree", local.resource, None, local.bound_gbs, ceilings[1].basis, ceilings[1].sources)
    return Result(ceilings, intra.unknown if local is None else [])


def ceilings(topo: Topology) -> Result:
    intra = intra_node(topo)
    return intra if (topo.nodes or 1) <= 1 else inter_node(topo, intra)


def judge(measured: float, result: Result) -> dict:
    """{verdict, ratio, ceiling_gbs, bound_gbs, resource}: at_limit (>= at_limit x the reachable ceiling, or
    above it yet within the hardware's bound), below, above_hardware (past what any allowed algorithm can carry),
    or unknown (no reachable figure: `unknown` says what decides it, or only the bound is known)."""
    best, bound = result.best, result.bound_gbs
    capping = best or next((c for c in result.ceilings if c.bound_gbs == bound), None)
    out = {"ceiling_gbs": best.gbs if best else None, "bound_gbs": bound,
           "resource": capping.resource if capping else None, "ratio": None}
    verdict, ratio = verdict_of(measured, best.gbs if best else None, bound)
    return out | {"verdict": verdict, "ratio": ratio}


def verdict_of(measured: float, ceiling_gbs: float | None, bound_gbs: float | None) -> tuple[str, float | None]:
    """(at_limit | below | above_hardware | unknown, ratio) of one busbw against a reachable ceiling and the
    hardware's bound (judge's rule, written once: the per-size CSV rows are judged by it too)."""
    limits = table()
    if bound_gbs is not None and measured > bound_gbs * limits["above_bound"]:
        return "above_hardware", round(measured / bound_gbs, 3)
    if not ceiling_gbs:
        return "unknown", None
    ratio = round(measured / ceiling_gbs, 3)
    return ("at_limit" if ratio >= limits["at_limit"] else "below"), ratio
