"""Where the GPUs and RDMA NICs sit in the PCIe tree, from lspci -vvv's devices (parsers/lspci.py).

A bridge holds every device on its secondary..subordinate bus range (PCI-to-PCI bridge spec,
the "Bus: primary=, secondary=, subordinate=" line lspci prints from the config header, which a
user may read). NCCL's traffic crosses the GPUs, the NICs and every bridge above them.
"""

from __future__ import annotations

import re

# A PCI address as the kernel prints it: domain:bus:device.function (drivers/pci/probe.c pci_name)
BDF = re.compile(r"\b([0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])\b", re.I)


def holds(bridge: dict, bdf: str) -> bool:
    """Whether `bdf` sits in the bridge's secondary..subordinate bus range (same PCI domain)."""
    domain, bus = bdf.rsplit(":", 2)[0], int(bdf.rsplit(":", 2)[1], 16)
    return bridge["bdf"].rsplit(":", 2)[0] == domain and bridge["secondary_bus"] <= bus <= bridge["subordinate_bus"]


def below(bridge: dict, devices: list[dict]) -> list[dict]:
    """The GPUs and NICs below the bridge."""
    return [d for d in devices if d.get("kind") and holds(bridge, d["bdf"])]


def on_path(devices: list[dict]) -> set[str]:
    """The addresses of the GPUs, the RDMA NICs and every bridge above one of them (lower case)."""
    devices = [d for d in devices if isinstance(d, dict) and d.get("bdf")]
    bridges = [d for d in devices if d.get("secondary_bus") is not None and d.get("subordinate_bus") is not None]
    path = {d["bdf"] for d in devices if d.get("kind")} | {b["bdf"] for b in bridges if below(b, devices)}
    return {bdf.lower() for bdf in path}
