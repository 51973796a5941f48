"""Derived facts about what the job's process and the kernel saw: the RDMA userspace the job can
load, and the kernel log's events (link flaps, GPU Xid errors, peermem errors, PCIe AER).
"""

from __future__ import annotations

import posixpath

from allreduce_doctor.domain import RDMA_LIB, verbs_provider
from allreduce_doctor.observations import MISSING, OK, Observation
from allreduce_doctor.parsers.kernel import link_flaps, xid_codes
from allreduce_doctor.probes.derive_job import blocked_input

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
    the job decides, never this tool's filesystem: mapped in /proc/PID/maps is present; not mapped
    (NCCL may not have initialized yet) is judged from the job's /proc/PID/root. Without a job it
    is unknown: the job's maps, or a log's `Failed to open libibverbs`, decide it."""
    if (blocked := blocked_input(inputs, "node.fabric")) is not None:
        return blocked
    if inputs["node.fabric"].value.get("fabric") == "none":
        return Observation("", {"missing": [], "from": "no RDMA devices"}, OK)
    job = inputs["rdma.job_userspace"]
    if job.status != OK:
        return Observation("", None, job.status, reason=f"rdma.job_userspace: {job.reason or job.status}")
    ports = inputs["rdma.ports"].value if inputs["rdma.ports"].status == OK else []
    needed = ["ibverbs"] + sorted({p for p in (verbs_provider(r.get("device")) for r in ports or []) if p})
    mapped, files = _libs(job.value.get("mapped")), job.value.get("files")
    value = {"needed": needed, "mapped": sorted(mapped), "pid": job.value.get("pid")}
    if all(lib in mapped for lib in needed):
        return Observation("", dict(value, missing=[], **{"from": "/proc/PID/maps"}), OK)
    if files is None:
        return Observation("", None, MISSING, reason=f"the job maps no {', '.join(n for n in needed if n not in mapped)} "
                                                     f"yet and {job.reason or 'its root is not readable'}")
    present = mapped | _libs(files)
    missing = [f"lib{lib}" for lib in needed if lib not in present]
    return Observation("", dict(value, missing=missing, files=files, **{"from": "/proc/PID/maps and /proc/PID/root"}), OK)


def kernel_events(inputs: Inputs) -> Observation:
    """What the kernel log says since boot, with the same rules as pasted kernel lines
    (parsers/kernel.py): links that went down after being up, GPU Xid codes (application Xids
    left out), nvidia_peermem errors, uncorrectable PCIe AER errors."""
    if (blocked := blocked_input(inputs, "kernel.dmesg")) is not None:
        return blocked
    rows = inputs["kernel.dmesg"].value or []
    kinds = {k: [r["text"] for r in rows if r.get("kind") == k] for k in ("peermem_error", "pcie_aer_uncorrected")}
    xids = xid_codes(rows)
    value = {"link_flaps": link_flaps(rows), "xid": xids, "peermem_errors": len(kinds["peermem_error"]),
             "aer_uncorrected": len(kinds["pcie_aer_uncorrected"]),
             "aer_corrected": sum(r.get("kind") == "pcie_aer_corrected" for r in rows),
             "examples": [t[:200] for t in (kinds["peermem_error"][:1] + kinds["pcie_aer_uncorrected"][:1]
                                            + [r["text"] for r in rows if r.get("kind") == "gpu_xid"][:1])]}
    return Observation("", value, OK)


DERIVATIONS = {"rdma_userspace": rdma_userspace, "kernel_events": kernel_events}
