"""Derived facts about what the job's process and the kernel saw: the RDMA userspace the job can
load, and the kernel log's events (link flaps, GPU Xid errors, peermem errors, PCIe AER).
"""

from __future__ import annotations

import posixpath
import re

from allreduce_doctor.domain import RDMA_LIB
from allreduce_doctor.observations import MISSING, OK, Observation
from allreduce_doctor.parsers.kernel import link_flaps, xid_codes
from allreduce_doctor.probes import derive_job_view, pci_path
from allreduce_doctor.probes.derive_job import blocked_input
from allreduce_doctor.probes.derive_job_view import (
    PROVIDER_BY_DRIVER,
    configured_providers,
    device_providers,
)

Inputs = dict[str, Observation]


def _libs(paths) -> set[str]:
    """{'ibverbs', 'mlx5', ...} of the RDMA userspace files named."""
    found = set()
    for path in paths or ():
        m = RDMA_LIB.search(posixpath.basename(str(path)))
        if m:
            found.add(m.group(1))
    return found


def rdma_userspace(inputs: Inputs) -> Observation:
    """What the job lacks of libibverbs and the providers of this node's RDMA devices. NCCL loads
    them inside the job's mount namespace (dlopen libibverbs.so[.1], src/misc/ibvsymbols.cc), so
    the job decides, never this tool's filesystem. The provider a device needs follows its kernel
    driver (probes/derive_job_view.py). Mapped in /proc/PID/maps decides: once libibverbs is mapped,
    NCCL's ibv_get_device_list has loaded every provider the image configures (rdma-core
    libibverbs/init.c: load_drivers), so one not mapped is missing whatever files the image holds.
    Not mapped (NCCL may not have initialized yet) is judged from the job's /proc/PID/root: the
    provider's file and its /etc/libibverbs.d entry. Without a job it is unknown."""
    if (blocked := blocked_input(inputs, "node.fabric")) is not None:
        return blocked
    if inputs["node.fabric"].value.get("fabric") == "none":
        return Observation("", {"missing": [], "from": "no RDMA devices"}, OK)
    job = inputs["rdma.job_userspace"]
    if job.status != OK:
        return Observation("", None, job.status, reason=f"rdma.job_userspace: {job.reason or job.status}")
    by_provider, unmatched = device_providers(inputs)
    needed = ["ibverbs"] + sorted(by_provider)
    mapped, files = _libs(job.value.get("mapped")), job.value.get("files")
    value = {"needed": needed, "mapped": sorted(mapped), "pid": job.value.get("pid")}
    if unmatched:
        value["unmatched"] = unmatched
    if all(lib in mapped for lib in needed):
        return _unmatched(value, [], "/proc/PID/maps")
    if "ibverbs" in mapped:
        return _unmatched(value, [f"lib{lib}" for lib in needed if lib not in mapped], "/proc/PID/maps (libibverbs loaded)")
    if files is None:
        return Observation("", None, MISSING, reason=f"the job maps no {', '.join(n for n in needed if n not in mapped)} "
                                                     f"yet and {job.reason or 'its root is not readable'}")
    present = mapped | _libs(files)
    # The image's own rdma-core reads /etc/libibverbs.d (IBV_CONFIG_DIR); one under another prefix
    # (LD_LIBRARY_PATH) has its own, not known here.
    standard = all(str(f).startswith(("/usr/", "/lib")) for f in files if "libibverbs.so" in str(f))
    configured = configured_providers(inputs) if standard else None
    unconfigured = [lib for lib in needed[1:] if lib in present and configured is not None and lib not in configured]
    missing = [f"lib{lib}" for lib in needed if lib not in present or lib in unconfigured]
    value.update(files=files, configured=None if configured is None else sorted(configured))
    if unconfigured:
        value["no_driver_file"] = [f"/etc/libibverbs.d/{lib}.driver" for lib in unconfigured]
    return _unmatched(value, missing, "/proc/PID/maps and /proc/PID/root")


def _unmatched(value: dict, missing: list[str], source: str) -> Observation:
    """A device whose provider is unknown leaves the answer unknown when nothing else is missing."""
    if not missing and value.get("unmatched"):
        return Observation("", None, MISSING, reason=f"the verbs provider of {', '.join(value['unmatched'])} is not "
                                                     "known (its kernel driver, /sys/class/infiniband/DEV/device/driver)")
    return Observation("", dict(value, missing=missing, **{"from": source}), OK)


def kernel_events(inputs: Inputs) -> Observation:
    """What the kernel log says since boot, with the same rules as pasted kernel lines
    (parsers/kernel.py): links that went down after being up, GPU Xid codes (application Xids
    left out), nvidia_peermem errors, uncorrectable PCIe AER errors of the devices NCCL's traffic
    crosses (the GPUs, the RDMA NICs, the bridges above them: pci.lspci)."""
    if (blocked := blocked_input(inputs, "kernel.dmesg")) is not None:
        return blocked
    rows = inputs["kernel.dmesg"].value or []
    kinds = {k: [r["text"] for r in rows if r.get("kind") == k] for k in ("peermem_error", "pcie_aer_uncorrected")}
    aer, elsewhere, why = _aer_on_path(kinds["pcie_aer_uncorrected"], inputs.get("pci.lspci"))
    xids = xid_codes(rows)
    value = {"link_flaps": link_flaps(rows), "xid": xids, "peermem_errors": len(kinds["peermem_error"]),
             "aer_uncorrected": None if why else len(aer), "aer_elsewhere": len(elsewhere),
             "aer_corrected": sum(r.get("kind") == "pcie_aer_corrected" for r in rows),
             "examples": [t[:200] for t in (kinds["peermem_error"][:1] + aer[:1] + elsewhere[:1]
                                            + [r["text"] for r in rows if r.get("kind") == "gpu_xid"][:1])]}
    return Observation("", value, OK, reason=why)


# drivers/pci/pcie/aer.c: the root port reports "AER: [Multiple ]Uncorrected (...) error received:
# <source>", the source device's driver then prints "<bdf>: PCIe Bus Error: severity=...".
_AER_SOURCE = re.compile(r"error received:\s*" + pci_path.BDF.pattern, re.I)


def _aer_on_path(lines: list[str], lspci: Observation | None) -> tuple[list[str], list[str], str]:
    """(the uncorrectable AER lines of a GPU, an RDMA NIC or a bridge above one, the lines of other
    devices (an NVMe drive, a storage HBA: shown, not judged), why it cannot be told)."""
    if not lines:
        return [], [], ""
    if lspci is None or lspci.status != OK or not isinstance(lspci.value, list):
        return lines, [], ("uncorrectable AER errors were logged, but whether their devices carry NCCL's traffic "
                           "is unknown: lspci -vvv was not read")
    path = pci_path.on_path(lspci.value)
    on: list[str] = []
    off: list[str] = []
    for line in lines:
        source = _AER_SOURCE.search(line)
        named = [source.group(1)] if source else pci_path.BDF.findall(line)
        (on if not named or any(b.lower() in path for b in named) else off).append(line)
    return on, off, ""


# Vendors whose every network function is RDMA hardware: a Mellanox/NVIDIA ConnectX or BlueField
# function always gets mlx5_core's "rdma" auxiliary device, which mlx5_ib binds (linux
# drivers/net/ethernet/mellanox/mlx5/core/dev.c mlx5_adev_devices). Vendors with no RDMA driver of
# their functions in the kernel: virtio-net (0x1af4, drivers/net/virtio_net.c registers no ib device).
RDMA_VENDORS = ("0x15b3",)
NO_RDMA_VENDORS = ("0x1af4",)


def _rdma_capable(fn: dict) -> bool | None:
    """True: the function can carry an RDMA device (an InfiniBand controller, class 0x0207; a
    Mellanox vendor id; or the PCI driver an RDMA driver sits on, PROVIDER_BY_DRIVER). False: its
    driver or vendor has none. None: no driver read and a vendor that does not decide it."""
    if str(fn.get("class") or "").startswith("0x0207") or fn.get("vendor") in RDMA_VENDORS:
        return True
    driver = str(fn.get("driver") or "").split(".", 1)[0]
    if driver:
        return driver in PROVIDER_BY_DRIVER
    return False if fn.get("vendor") in NO_RDMA_VENDORS else None


def rdma_hardware(inputs: Inputs) -> Observation:
    """Whether the node has a NIC that can carry RDMA at all: what tells an RDMA driver not loaded
    (the NIC is there, its ib device is not) from a node built without RDMA (virtio-net or a plain
    Ethernet NIC only), where NCCL between nodes can only ever use TCP sockets."""
    obs = inputs["pci.network_functions"]
    if obs.status != OK:
        return Observation("", None, obs.status, reason=f"pci.network_functions: {obs.reason or obs.status}")
    functions = [f for f in obs.value or [] if f.get("class") is not None]
    unread = [f["bdf"] for f in obs.value or [] if f.get("class") is None]
    verdicts = {f["bdf"]: _rdma_capable(f) for f in functions}
    capable = [bdf for bdf, v in verdicts.items() if v]
    undecided = [bdf for bdf, v in verdicts.items() if v is None] + unread
    value = {"present": True if capable else None if undecided else False, "capable": capable,
             "undecided": undecided, "functions": functions}
    return Observation("", value, OK, "/sys/bus/pci/devices")


DERIVATIONS = {"rdma_userspace": rdma_userspace, "rdma_hardware": rdma_hardware, "kernel_events": kernel_events,
               **derive_job_view.DERIVATIONS}  # the job's /dev/infiniband and memlock
