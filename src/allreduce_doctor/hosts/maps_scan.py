"""The job's libraries from /proc/PID/maps, scanned within the collection's output budget.

Part of LiveHost's process scan (hosts/live.py): the only other place that opens a file under /proc.
"""

from __future__ import annotations

import re

from allreduce_doctor.domain import RDMA_LIB
from allreduce_doctor.hosts.budget import OutputBudget

# A process has at most vm.max_map_count mappings (65530 by default, Documentation/admin-guide/
# sysctl/vm.rst), one line each in /proc/PID/maps (~100-200 bytes): 16 MiB holds the largest.
MAX_MAPS_BYTES = 16 << 20
_MAPS_CHUNK = 1 << 16
# NCCL's net plugins: NCCL dlopens libnccl-net.so, or libnccl-net-<NCCL_NET_PLUGIN>.so / the name
# itself (NVIDIA/nccl src/net.cc ncclNetPluginInit at v2.18-v2.26, src/plugin/plugin_open.cc from
# v2.27); aws-ofi-nccl's libfabric.so and libfabric's DSO providers (lib<prov>-fi.so, its fabric.c).
NET_LIB = re.compile(r"^lib(nccl-net[^/]*\.so|fabric\.so|[a-z0-9]+-fi\.so)")


def mapped_libs(pid: int, budget: OutputBudget) -> tuple[str, list[str], str, list[str]]:
    """(libnccl path, RDMA userspace paths, why the scan was cut, net plugin and libfabric paths) mapped into pid: /proc/PID/maps
    names the real files the process loaded, in its own mount namespace (proc(5)). NCCL dlopens
    libibverbs.so[.1] at init (src/misc/ibvsymbols.cc), which loads the provider (libmlx5,
    libbnxt_re, ...; rdma-core libibverbs/dynamic_driver.c). Scanned a chunk at a time, each drawn
    from the collection's output budget and given back once scanned (only the paths are kept)."""
    rdma: list[str] = []
    net: list[str] = []
    nccl, cut, scanned, tail = "", "", 0, b""
    try:
        with open(f"/proc/{pid}/maps", "rb") as fh:
            while True:
                granted = budget.reserve(_MAPS_CHUNK)
                if not granted:
                    cut = budget.reason(f"/proc/{pid}/maps scanned for {scanned} bytes")
                    break
                try:
                    chunk = fh.read(min(granted, MAX_MAPS_BYTES - scanned))
                finally:
                    budget.settle(granted, 0)
                if not chunk:
                    break
                scanned += len(chunk)
                lines = (tail + chunk).split(b"\n")
                tail = lines.pop()[-4096:]  # a partial line waits for the next chunk (bounded)
                nccl = _scan_maps_lines(lines, nccl, rdma, net)
                if scanned >= MAX_MAPS_BYTES:
                    cut = f"/proc/{pid}/maps over {MAX_MAPS_BYTES >> 20} MiB: only its first {MAX_MAPS_BYTES >> 20} MiB scanned"
                    break
    except OSError:
        return nccl, rdma[:32], cut, net
    nccl = _scan_maps_lines([tail], nccl, rdma, net)
    return nccl, rdma[:32], cut, net


def _scan_maps_lines(lines: list[bytes], nccl: str, rdma: list[str], net: list[str]) -> str:
    """Add the RDMA libraries these maps lines name to `rdma`, the net plugins and libfabric to
    `net`; the libnccl path (the first found). A plugin (libnccl-net.so) is not libnccl itself."""
    for line in lines:
        path = line.rsplit(b" ", 1)[-1]
        name = path.rsplit(b"/", 1)[-1].decode("utf-8", "replace")
        found = rdma if RDMA_LIB.search(name) else net if NET_LIB.search(name) else None
        if b"/libnccl" in path and not nccl and found is None:
            nccl = path.decode("utf-8", "replace")[:512]
        elif found is not None:
            decoded = path.decode("utf-8", "replace")[:512]
            if decoded not in found and len(found) < 32:
                found.append(decoded)
    return nccl
