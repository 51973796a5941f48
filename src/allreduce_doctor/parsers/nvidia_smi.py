"""nvidia-smi: `topo -m` (GPU/NIC PCIe/NVLink matrix), `nvlink -s` (per-link speed) and the
`Fabric` section of `nvidia-smi -q` (NVSwitch/NVLink fabric registration)."""

from __future__ import annotations

import re

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import NUM, fail, indent, kv, lines, require, snake

# ---- topo -m --------------------------------------------------------------------------

_LEGEND_RE = re.compile(r"^\s*(NIC[0-9]+)\s*:\s*(\S+)\s*$", re.ASCII)


def _topo_header(tokens: list[str]) -> list[str]:
    """Device columns are the header tokens before 'CPU Affinity' (GPU0.., NIC0.. or,
    on old drivers, mlx5_0..)."""
    devices = []
    for i, token in enumerate(tokens):
        if token == "CPU" and tokens[i + 1 : i + 2] == ["Affinity"]:
            break
        devices.append(token)
    return devices


@parser("nvidia_smi_topo")
def parse_nvidia_smi_topo(text: str) -> dict:
    what = "nvidia-smi topo -m output (GPU0 GPU1 ... CPU Affinity matrix)"
    require(text, what)
    devices: list[str] = []
    out: dict = {"devices": devices, "matrix": {}, "cpu_affinity": {}, "numa_affinity": {}, "nic_legend": {}}
    in_matrix = True
    for line in lines(text):
        tokens = line.split()
        if tokens[0].startswith("Legend"):
            in_matrix = False
        if not devices:
            if "Affinity" in tokens and tokens[0] != "CPU":
                devices.extend(_topo_header(tokens))
            continue
        m = _LEGEND_RE.match(line)
        if m:
            out["nic_legend"][m.group(1)] = m.group(2)
            continue
        if not in_matrix or tokens[0] not in devices or len(tokens) < len(devices) + 1:
            continue
        row, cells, extra = tokens[0], tokens[1 : len(devices) + 1], tokens[len(devices) + 1 :]
        out["matrix"][row] = {col: cell for col, cell in zip(devices, cells) if col != row}
        if extra:
            out["cpu_affinity"][row] = extra[0]
        if len(extra) > 1:
            out["numa_affinity"][row] = extra[1]
        if len(extra) > 2 and extra[2] != "N/A":  # the GPU's memory is a NUMA node: coherent C2C (Grace)
            out.setdefault("gpu_numa_id", {})[row] = extra[2]
    if not devices or not out["matrix"]:
        raise fail(what, text)
    return out


# ---- nvlink -s ------------------------------------------------------------------------

_GPU_RE = re.compile(r"^\s*GPU\s+([0-9]+)\s*:(.*)$", re.ASCII)
_LINK_RE = re.compile(rf"^\s*Link\s+([0-9]+)\s*:\s*(?:({NUM})\s*GB/s|(.*))$", re.ASCII)
# `-s` prints one `Link N: <speed> GB/s` or `Link N: <inactive>` a link; the other nvlink subcommands print
# the same `GPU N:` / `Link N:` frame with a `Name: value` after it (`-e`/--errorcounters: `Link 0: Replay
# Errors: 0`, `Link 0: CRC Errors: 0`; nvidia-smi(1) NVLINK section). Read as -s, those would be links with
# no speed, i.e. every link inactive on a healthy node.
_OTHER_SUBCOMMAND_RE = re.compile(r"^[A-Za-z][\w ()/-]*:\s*\S")


@parser("nvidia_smi_nvlink")
def parse_nvidia_smi_nvlink(text: str) -> dict:
    """Link speeds in GB/s; '<inactive>' links are None. A GPU whose NVML reports 'all links
    are inactive' has no links; all_inactive is True when no GPU has an active link."""
    what = "nvidia-smi nvlink -s output (GPU N: ... / Link N: X GB/s)"
    require(text, what)
    gpus: dict[str, dict] = {}
    gpu: dict | None = None
    for line in lines(text):
        m = _GPU_RE.match(line)
        if m:
            name, _, uuid = m.group(2).partition("(UUID:")  # 'NAME (UUID: GPU-...)'
            uuid = uuid.strip().rstrip(")").strip()
            gpu = {"name": name.strip() or None, "uuid": uuid or None, "links": {}}
            gpus[m.group(1)] = gpu
            continue
        m = _LINK_RE.match(line)
        if m and m.group(3) and _OTHER_SUBCOMMAND_RE.match(m.group(3).strip()):
            tool = "nvidia-smi nvlink -e (error counters)" if "error" in m.group(3).lower() \
                else "another nvidia-smi nvlink subcommand"
            raise ParseError(f"expected nvidia-smi nvlink -s, got {tool}: {line.strip()!r}; "
                             "paste `nvidia-smi nvlink -s` for the link speeds")
        if m and gpu is not None:
            gpu["links"][m.group(1)] = float(m.group(2)) if m.group(2) else None
    if not gpus:
        raise fail(what, text)
    active = any(v is not None for g in gpus.values() for v in g["links"].values())
    return {"gpus": gpus, "all_inactive": not active}


# ---- nvidia-smi -q: Fabric ------------------------------------------------------------

_BUS_RE = re.compile(r"^\s*GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$", re.ASCII)
# Keys that belong to the Fabric section (used when a copy lost its indentation); driver 580 adds
# "Partition Assigned" to the Health sub-block (tests/fixtures/outputs/nvidia-smi-q-h200-vm.txt).
_FABRIC_KEYS = {
    "state", "status", "cliqueid", "clusteruuid", "health", "bandwidth", "summary",
    "route recovery in progress", "route unhealthy", "access timeout recovery",
    "incorrect configuration", "partition assigned",
}


def _key(line: str) -> str:
    pair = kv(line)
    return (pair[0] if pair else line.strip()).lower()


def _na(raw: str) -> str | None:
    return None if raw in ("", "N/A") else raw


def _fabric(section: list[str], bus_id: str | None) -> dict:
    entry: dict = {"bus_id": bus_id, "state": None, "status": None, "clique_id": None,
                   "cluster_uuid": None, "health": {}}
    in_health = False
    for line in section:
        if line.strip().lower() == "health":  # a sub-header, no colon
            in_health = True
            continue
        pair = kv(line)
        if pair is None:
            continue
        key, raw = pair[0].lower(), pair[1]
        if in_health and key not in ("state", "status", "cliqueid", "clusteruuid"):
            entry["health"][snake(key)] = _na(raw)
        elif key in ("state", "status"):
            entry[key] = _na(raw)
        elif key == "cliqueid":
            entry["clique_id"] = _na(raw)
        elif key == "clusteruuid":
            entry["cluster_uuid"] = _na(raw)
    return entry


@parser("nvidia_smi_fabric")
def parse_nvidia_smi_fabric(text: str) -> dict:
    """One entry per `Fabric` section, in GPU order; 'N/A' (no NVSwitch fabric) -> None.
    Output with GPU blocks but no Fabric section (older drivers) gives {"gpus": []}; `names` holds each GPU
    block's Product Name."""
    what = "nvidia-smi -q output (GPU <bus id> blocks or a Fabric section)"
    require(text, what)
    rows = list(lines(text))
    gpus: list[dict] = []
    names: list[str] = []  # each GPU block's Product Name, in GPU order (the ceiling's GPU model: ceiling_node.py)
    bus_id: str | None = None
    saw_gpu = False
    for i, line in enumerate(rows):
        m = _BUS_RE.match(line)
        if m:
            bus_id, saw_gpu = m.group(1), True
            continue
        pair = kv(line) if saw_gpu and len(names) < 64 else None
        if pair is not None and pair[0].lower() == "product name" and _na(pair[1]):
            names.append(pair[1])
            continue
        if line.strip() != "Fabric":
            continue
        base, section = indent(line), []
        for child in rows[i + 1 :]:
            if indent(child) <= base and _key(child) not in _FABRIC_KEYS:
                break
            section.append(child)
        gpus.append(_fabric(section, bus_id))
    if not gpus and not saw_gpu:
        raise fail(what, text)
    return {"gpus": gpus, "names": names}
