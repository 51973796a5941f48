"""Kernel-side evidence: /proc/cmdline (IOMMU mode) and dmesg / syslog lines classified
into the events that explain a slow all-reduce."""

from __future__ import annotations

import re
import shlex

from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import lines, require

_IOMMU_KEYS = ("iommu", "intel_iommu", "amd_iommu")


def _iommu(args: dict) -> tuple[str | None, bool]:
    """pt when passthrough is asked for (iommu=pt or iommu.passthrough=1), else off/on from
    iommu=, intel_iommu=, amd_iommu= (comma lists like 'on,sm_on'); "default" when the command
    line names no IOMMU parameter at all (the kernel's build default applies: CONFIG_INTEL_IOMMU_DEFAULT_ON,
    CONFIG_IOMMU_DEFAULT_PASSTHROUGH; Documentation/admin-guide/kernel-parameters.txt); None when
    a parameter is there but says none of these."""
    words: set[str] = set()
    for key in _IOMMU_KEYS:
        value = args.get(key)
        if isinstance(value, str):
            words.update(w.strip().lower() for w in value.split(","))
    passthrough = "pt" in words or str(args.get("iommu.passthrough", "")).strip() in ("1", "y", "on")
    if passthrough:
        return "pt", True
    if "off" in words:
        return "off", False
    if words & {"on", "force", "sm_on"}:
        return "on", False
    if not any(key in args for key in (*_IOMMU_KEYS, "iommu.passthrough", "iommu.strict")):
        return "default", False
    return None, False


@parser("proc_cmdline")
def parse_proc_cmdline(text: str) -> dict:
    """Flags without '=' map to True; a repeated key keeps its last value (as the kernel does
    for most parameters)."""
    require(text, "the contents of /proc/cmdline")
    try:
        tokens = shlex.split(text)
    except ValueError:  # unbalanced quote: fall back to plain words
        tokens = text.split()
    args: dict = {}
    for token in tokens:
        key, sep, value = token.partition("=")
        if key:
            args[key] = value if sep else True
    mode, passthrough = _iommu(args)
    return {"args": args, "iommu": mode, "iommu_passthrough": passthrough}


# Order matters: the first pattern that matches names the line.
_KINDS = (
    # kernel pcie_print_link_status(): '... available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 link at ...'
    ("pcie_bandwidth_limited", re.compile(r"bandwidth\b.*\blimited\b", re.I)),
    # the same line without 'limited': the trained link, informational
    ("pcie_bandwidth", re.compile(r"available PCIe bandwidth", re.I)),
    ("peermem_error", re.compile(r"(nvidia[-_]peermem|nv_peer_mem).*\b(error|fail\w*|invalid|unable)\b", re.I)),
    # IOMMU faults: Intel DMAR (drivers/iommu/intel/dmar.c "DMAR: [DMA Read] Request device ... fault"),
    # AMD-Vi (drivers/iommu/amd/iommu.c "AMD-Vi: Event logged [IO_PAGE_FAULT ...]")
    ("iommu_fault", re.compile(r"DMAR:.*fault|AMD-Vi:.*(IO_PAGE_FAULT|Event logged)|iommu.*fault", re.I)),
    # the NVIDIA driver's "NVRM: Xid (PCI:0000:1b:00): 79, pid=..., GPU has fallen off the bus"
    ("gpu_xid", re.compile(r"NVRM: Xid\b", re.I)),
    # drivers/pci/pcie/aer.c: "PCIe Bus Error: severity=Uncorrectable (Non-Fatal)" (older kernels:
    # "Uncorrected"), "AER: Uncorrected (Fatal) error received"; corrected errors are the link's own retry
    ("pcie_aer_uncorrected", re.compile(r"(PCIe Bus Error: severity=|AER: (Multiple )?)Uncorrect", re.I)),
    ("pcie_aer_corrected", re.compile(r"(PCIe Bus Error: severity=|AER: (Multiple )?)Correct", re.I)),
    ("link_flap", re.compile(r"\b(lost carrier|gained carrier|link (is )?down|link (is )?up)\b", re.I)),
)
_LINK_EVENT = re.compile(r"\b([\w.-]+): (lost carrier|gained carrier|link (?:is )?(?:down|up))", re.I)
_XID = re.compile(r"NVRM: Xid \([^)]*\):\s*(\d+)", re.I)
# NVIDIA's Xid catalogue (https://docs.nvidia.com/deploy/xid-errors/): 13 (graphics engine
# exception), 31 (GPU memory page fault), 43 (GPU stopped processing) and 45 (preemptive cleanup)
# are raised by the application's own faults, not by the GPU or the node.
APPLICATION_XIDS = frozenset({13, 31, 43, 45})


@parser("dmesg_lines")
def parse_dmesg_lines(text: str) -> list[dict]:
    """Every non-blank line as {"text", "kind"}; kind is one of pcie_bandwidth_limited,
    pcie_bandwidth, peermem_error, iommu_fault, gpu_xid, pcie_aer_uncorrected,
    pcie_aer_corrected, link_flap or other. Empty input gives []."""
    out = []
    for line in lines(text):
        kind = next((name for name, rx in _KINDS if rx.search(line)), "other")
        out.append({"text": line.strip(), "kind": kind})
    return out


def link_flaps(rows: list[dict]) -> dict[str, int]:
    """Interfaces whose link went down after it had been up, or down twice: {iface: link events}.
    A link that comes up at boot logs "Link down" then "Link up" (mlx5e_update_carrier() in
    drivers/net/ethernet/mellanox/mlx5/core/en_main.c logs each carrier change): not a flap."""
    events: dict[str, list[bool]] = {}
    for row in rows:
        if row.get("kind") == "link_flap" and (m := _LINK_EVENT.search(row["text"])):
            events.setdefault(m.group(1), []).append(m.group(2).lower() in ("gained carrier", "link up", "link is up"))
    flaps = {}
    for iface, ups in events.items():
        downs = [i for i, up in enumerate(ups) if not up]
        if len(downs) >= 2 or any(True in ups[:i] for i in downs):
            flaps[iface] = len(ups)
    return flaps


def xid_codes(rows: list[dict]) -> list[int]:
    """The Xid codes of the GPU-side (not application) errors logged, in order, each once."""
    codes: list[int] = []
    for row in rows:
        if row.get("kind") == "gpu_xid" and (m := _XID.search(row["text"])):
            code = int(m.group(1))
            if code not in APPLICATION_XIDS and code not in codes:
                codes.append(code)
    return codes
