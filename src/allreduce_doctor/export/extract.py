"""Facts a ticket wants that no single diagnosis field holds: versions, bus bandwidth, Slurm job.

They are looked up by key name anywhere in the context and the evidence (a port record carries
`fw_ver`, a pasted NCCL log `version`, an nccl-tests table `peak_busbw`), so new evidence sources
show up in tickets without changes here. What is not found is "unknown", never guessed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

UNKNOWN = "unknown"
MAX_DEPTH = 8
# ticket label -> keys that hold it (context["versions"] may also hold the label's key directly)
VERSION_KEYS = {
    "kernel": ("kernel", "kernel_version", "kernel_release"),
    "gpu_driver": ("gpu_driver", "driver_version", "nvidia_driver", "gpu_driver_version"),
    "nccl": ("nccl_version",),
    "rdma_core": ("rdma_core", "rdma_core_version"),
    "nic_firmware": ("nic_firmware", "fw_ver", "firmware_version"),
}
VERSION_LABELS = {"kernel": "kernel", "gpu_driver": "GPU driver", "nccl": "NCCL", "rdma_core": "rdma-core",
                  "nic_firmware": "NIC firmware"}
# node.busbw (derived: NICs x line rate, and the measured value answered or read from nccl-tests)
MEASURED_BUSBW = ("measured_gbs", "peak_busbw", "busbw_peak", "avg_busbw", "busbw_avg", "busbw")
JUDGED = ("at_limit", "below", "above_hardware")  # the ceiling's verdicts that hold a figure (ceiling.verdict_of)
EXPECTED_BUSBW = ("line_gbs", "expected_gbs", "expected_busbw", "busbw_expected")
SLURM_JOB_KEYS = ("slurm_job", "SLURM_JOB_ID", "SLURM_JOBID")


def _dicts(value, depth: int = 0):
    """Every mapping inside value, outermost first (bounded depth)."""
    if depth > MAX_DEPTH:
        return
    if isinstance(value, dict):
        yield value
        children: Iterable[Any] = value.values()
    elif isinstance(value, list):
        children = value
    else:
        return
    for child in children:
        yield from _dicts(child, depth + 1)


def _lookup(record: dict, key: str):
    """record[key], also under a fact reference that ends in it (node.busbw.measured_gbs)."""
    if key in record:
        return record[key]
    return next((v for k, v in record.items() if isinstance(k, str) and k.endswith("." + key)), None)


def _places(d: dict) -> list:
    """Where facts are looked up, in order of trust: the context, the evidence, the path's values."""
    places = [d.get("context") or {}]
    # an evidence row is {fact: observed}: a scalar fact such as node.busbw.measured_gbs is found too
    places += [{str(row.get("fact")): row.get("observed")} for row in d.get("evidence") or []]
    places += [step.get("value") for step in d.get("path") or []]
    places.append(d.get("evidence_used"))
    return places


def _scalar(value) -> str | None:
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        return None
    text = " ".join(str(value).split())
    return text or None


def _nccl_log_versions(d: dict) -> list[str]:
    """An NCCL log states its version as `version` in the log.nccl fact."""
    found = []
    for row in d.get("evidence") or []:
        if str(row.get("fact", "")).startswith("log.nccl") and isinstance(row.get("observed"), dict):
            value = _scalar(row["observed"].get("version"))
            if value:
                found.append(value)
    return found


def versions(d: dict) -> list[tuple[str, str]]:
    """(label, value) for kernel, GPU driver, NCCL, rdma-core and NIC firmware; unknown when absent."""
    ctx = d.get("context") or {}
    given = ctx["versions"] if isinstance(ctx.get("versions"), dict) else {}
    out = []
    for name, keys in VERSION_KEYS.items():
        value = _scalar(given.get(name)) or next((v for v in map(lambda k: _scalar(ctx.get(k)), keys) if v), None)
        if value is None:
            value = _collect(d, keys, extra=_nccl_log_versions(d) if name == "nccl" else [])
        out.append((VERSION_LABELS[name], value or UNKNOWN))
    return out


def _collect(d: dict, keys: tuple[str, ...], extra: list[str]) -> str | None:
    """The distinct values of keys, each counted once per device (or record) that carries it."""
    seen: dict[str, str] = {}
    for place in _places(d):
        for record in _dicts(place):
            for key in keys:
                value = _scalar(_lookup(record, key))
                if value is not None:
                    owner = record.get("device") or record.get("name") or json.dumps(record, sort_keys=True, default=str)[:200]
                    seen.setdefault(str(owner), value)
                    break
    for i, value in enumerate(extra):
        seen.setdefault(f"log#{i}", value)
    if not seen:
        return None
    counts = Counter(seen.values())
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{value} on {n}" for value, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value <= 0:
        return None
    return float(value)


def bandwidth(d: dict) -> dict | None:
    """{"measured": GB/s, "expected": GB/s or None, and "note" where the Diagnosis says why the NICs' rate is
    no yardstick} when the evidence measured bus bandwidth. A run across nodes judged against the ceiling model
    (busbw.across_nodes) expects the ceiling, not NICs x line rate, with its verdict as "hardware" and its words as
    "hardware_note"; an unknown ceiling keeps NICs x line rate and the words say what decides it."""
    own = d["bandwidth"] if isinstance(d.get("bandwidth"), dict) else {}
    if _number(own.get("measured_gbs")):  # the Diagnosis's own comparison (busbw.summary) comes first
        out = {"measured": _number(own["measured_gbs"]), "expected": _number(own.get("expected_gbs")), "unit": "GB/s"}
        ceiling = _number((own.get("ceiling") or {}).get("ceiling_gbs")) if isinstance(own.get("ceiling"), dict) else None
        if ceiling and own.get("hardware") in JUDGED and isinstance(own.get("hardware_note"), str):
            out |= {"expected": ceiling, "hardware": own["hardware"]}  # the ceiling: NICs capped by PCIe, the node
        return out | {k: own[k] for k in ("note", "hardware_note") if isinstance(own.get(k), str)}
    measured = expected = ratio = None
    for place in _places(d):
        for record in _dicts(place):
            if measured is None:
                measured = next((n for n in (_number(_lookup(record, k)) for k in MEASURED_BUSBW) if n), None)
            if expected is None:
                expected = next((n for n in (_number(_lookup(record, k)) for k in EXPECTED_BUSBW) if n), None)
            if ratio is None:  # only a ratio named for busbw: "ratio" alone means too many things
                ratio = next((_number(v) for k, v in record.items() if str(k).endswith(("busbw.ratio", "busbw_ratio"))), None)
    if measured is None:
        return None
    if expected is None and ratio:
        expected = round(measured / ratio, 1)  # the check states measured / (NICs x line rate)
    return {"measured": measured, "expected": expected, "unit": "GB/s"}


def slurm_job(d: dict) -> str | None:
    for place in _places(d):
        for record in _dicts(place):
            for key in SLURM_JOB_KEYS:
                value = _scalar(_lookup(record, key))
                if value:
                    return value
    return None


def cause_hosts(d: dict, cause: str) -> list[str]:
    """The hosts the cause belongs to, never one whose own fault is another cause: the root cause's
    `hosts` (a paste of several hosts: each host that found it on its own, by the prompt its outputs were
    pasted under), else the hosts of the finding that names it (fleet), else the fleet nodes whose own
    diagnosis found it. [] when the diagnosis names none (one node)."""
    rc = d.get("root_cause") or {}
    if rc.get("id") == cause and rc.get("hosts"):
        return [str(h) for h in rc["hosts"]]
    for f in d.get("findings") or []:
        if f.get("cause") == cause and f.get("hosts"):
            return [str(h) for h in f["hosts"]]
    per_node = (d.get("fleet") or {}).get("per_node") or {}
    return [str(n) for n, r in per_node.items() if isinstance(r, dict) and r.get("root_cause") == cause]
