"""hardware/ceilings.yaml as the markdown tables of docs/ceilings.md (tests/evidence/test_ceiling_table.py checks
the doc holds exactly these tables, so the doc and the data cannot drift apart).

`python -m allreduce_doctor.ceiling_doc` prints them.
"""

from __future__ import annotations

from allreduce_doctor.ceiling import Topology, ceilings, table

BEGIN, END = "<!-- ceiling table: generated from hardware/ceilings.yaml -->", "<!-- end of ceiling table -->"


def _nvswitch(rule) -> str:
    if rule in ("always", "never"):
        return {"always": "always", "never": "no"}[rule]
    return f"on {', '.join(str(n) for n in rule.get('gpus', []))}-GPU boards"


def _nvls(model: dict) -> str:
    nvls = model.get("nvls")
    if not isinstance(nvls, dict):
        return "no"
    figures = [f"{v['busbw_gbs']:g} on {n} GPUs ({v['source']})" for n, v in nvls.items()]
    return "yes: " + "; ".join(figures) if figures else "yes (no published figure)"


def _ceiling(key: str, model: dict) -> str:
    """The model's one-node ceiling on its usual board (8 GPUs, or 4 per GB200 tray)."""
    gpus = 4 if key == "GB200" else 8
    result = ceilings(Topology(gpu_model=key, gpus_per_node=gpus))
    if result.best is None:
        bound = f"at most {result.bound_gbs:g}" if result.bound_gbs else "not modelled"
        return f"{bound} ({gpus} GPUs)"
    return f"{result.best.gbs:g} {result.best.resource} ({gpus} GPUs; bound {result.bound_gbs:g})"


def _measured(model: dict) -> str:
    rows = [f"{m['busbw_gbs']:g} ({m['gpus']} GPUs, {m['algo']}; {m['source']})" for m in model.get("measured") or []]
    return "; ".join(rows) or "none found"


def _inter_node_rows(data: dict) -> list[str]:
    """Published multi-node busbw beside the model's inter-node ceiling for the same NICs and GPUs."""
    lines = ["", "| GPUs per node | NICs x Gb/s | Nodes | Algorithm | Published busbw (GB/s) | Model's ceiling (GB/s) | "
             "Published / model | Source |", "|---|---|---|---|---|---|---|---|"]
    for m in data.get("inter_node_measured") or []:
        nodes = m["nodes"] if isinstance(m["nodes"], int) else 3  # "many": past two nodes, the ring's figure
        result = ceilings(Topology(gpu_model=m["gpu"], gpus_per_node=m["gpus"], nodes=nodes, nics=m["nics"],
                                   nic_gbps=m["nic_gbps"], algos=frozenset({"ring"})))
        best = result.best
        model = f"{best.gbs:g} {best.resource}" if best and best.gbs else "not modelled"
        share = f"{m['busbw_gbs'] / best.gbs:.2f}" if best and best.gbs else "-"
        lines.append(f"| {m['gpus']}x {m['gpu']} | {m['nics']} x {m['nic_gbps']} | {m['nodes']} | {m['algo']} | "
                     f"{m['busbw_gbs']:g} | {model} | {share} | {m['source']} |")
    return lines


def render() -> str:
    data = table()
    header = ("| Model | Interconnect | Links x GB/s each way | NCCL's figure per link | NVSwitch | NVLS | PCIe | "
              "Ceiling, one node (GB/s) | Published busbw (GB/s) | Sources |")
    lines = [BEGIN, "", header, "|---|---|---|---|---|---|---|---|---|---|"]
    for key, m in data["models"].items():
        nccl = f"{m['nccl_link_gbs']:g}" if m.get("nccl_link_gbs") else "none"
        lines.append(f"| {key} | {m['interconnect']} | {m['links']} x {m['link_gbs']:g} = {m['links'] * m['link_gbs']:g} | "
                     f"{nccl} | {_nvswitch(m['nvswitch'])} | {_nvls(m)} | Gen{m['pcie']['gen']} x{m['pcie']['width']} | "
                     f"{_ceiling(key, m)} | {_measured(m)} | {', '.join(m['sources'])} |")
    lines += ["", "| PCIe | GT/s | Raw GB/s each way (x16) | NCCL's figure (x16) |", "|---|---|---|---|"]
    lines += [f"| Gen{gen} | {p['gts']} | {p['raw_gbs']:g} | {p['nccl_gbs']:g} |" for gen, p in data["pcie"].items()]
    lines += _inter_node_rows(data)
    lines += ["", "| NIC rate | Gb/s per port | GB/s per port |", "|---|---|---|"]
    lines += [f"| {name} | {gbps} | {gbps / 8:g} |" for name, gbps in data["nics"].items()]
    lines += ["", "| Source | What it gives |", "|---|---|"]
    lines += [f"| {name} | {text} |" for name, text in data["sources"].items()]
    return "\n".join(lines + ["", END]) + "\n"


if __name__ == "__main__":
    print(render(), end="")
