"""Whether NCCL can use GPUDirect RDMA on this node: nvidia_peermem or DMA-BUF, and NCCL_NET_GDR_LEVEL
against each GPU's real path to its NIC. Split from derive_job.py; registered into DERIVATIONS there."""

from __future__ import annotations

from allreduce_doctor.domain import KERNEL_DMABUF_SINCE, NCCL_DMABUF_SINCE, version_tuple
from allreduce_doctor.nccl_rules import gdr as nccl_gdr
from allreduce_doctor.nccl_rules.defaults import param_int
from allreduce_doctor.observations import OK, Observation
from allreduce_doctor.probes.derive_env import gdr_level_forbids
from allreduce_doctor.probes.derive_job import _env, _job_version, _rank, _vars

Inputs = dict[str, Observation]


def _at_least(version, since: tuple) -> bool | None:
    parsed = version_tuple(version)
    return None if parsed is None else parsed >= since


def gpudirect(inputs: Inputs) -> Observation:
    """Whether NCCL can register GPU memory with the NIC: nvidia_peermem, or DMA-BUF (NCCL >= 2.13,
    NCCL_DMABUF_ENABLE not 0, Linux >= 5.12, the NVIDIA open kernel module; domain.py). `usable`
    is None when a condition of DMA-BUF is unknown and peermem is not loaded."""
    peermem_obs = inputs["gpu.peermem"]
    peermem = peermem_obs.value if peermem_obs.status == OK else None
    log = inputs["log.nccl"].value if inputs["log.nccl"].status == OK and isinstance(inputs["log.nccl"].value, dict) else {}
    if any("GDRDMA" in str(t) for t in log.get("transports") or []):
        return Observation("", {"usable": True, "peermem": peermem, "dmabuf": None, "why": "the log shows NET/.../GDRDMA"}, OK)
    version = _job_version(inputs)
    forbidden = gdr_level_forbids(_vars(inputs), version) or _gdr_level_beyond_paths(inputs, version)
    if forbidden:
        return Observation("", {"usable": False, "peermem": peermem, "dmabuf": None, "why": forbidden}, OK, reason=forbidden)
    ident = inputs["node.identity"].value if inputs["node.identity"].status == OK else {}
    driver = inputs["gpu.driver"]
    checks = {
        "NCCL >= 2.13": _at_least(version, NCCL_DMABUF_SINCE),
        "NCCL_DMABUF_ENABLE not 0": None if _env(inputs) is None else _vars(inputs).get("NCCL_DMABUF_ENABLE", "1").strip() != "0",
        "Linux >= 5.12": _at_least((ident or {}).get("kernel"), KERNEL_DMABUF_SINCE),
        "NVIDIA open kernel module": "open kernel module" in str(driver.value).lower() if driver.status == OK else None,
    }
    failed = [name for name, ok in checks.items() if ok is False]
    dmabuf = False if failed else (None if None in checks.values() else True)
    unknown = [name for name, ok in checks.items() if ok is None]
    why = (f"DMA-BUF not usable: {', '.join(failed)} fails" if failed else
           f"DMA-BUF unknown: {', '.join(unknown)} not known" if unknown else "DMA-BUF usable")
    usable = True if peermem or dmabuf else (False if peermem is False and dmabuf is False else None)
    return Observation("", {"usable": usable, "peermem": peermem, "dmabuf": dmabuf, "checks": checks,
                            "nccl_version": version, "why": why}, OK, reason=why)


def _broadcom_switches(inputs: Inputs) -> bool | None:
    """Whether the node's PCIe switches may be Broadcom PEX88xxx/89xxx in base mode, which NCCL
    flattens into one switch (topo.cc getBcmGen / ncclTopoFlattenBcmSwitches, v2.12.12-1..v2.30.7-1):
    nvidia-smi's PXB is then NCCL's PIX. None when lspci -vvv was not read."""
    lspci = inputs.get("pci.lspci")
    if lspci is None or lspci.status != OK or not lspci.value:
        return None
    bridges = [str(d.get("name") or "") for d in lspci.value if d.get("secondary_bus") is not None]
    if not bridges:
        return None
    return any("PEX88" in b or "PEX89" in b for b in bridges)


def _gdr_level_beyond_paths(inputs: Inputs, version) -> str | None:
    """NCCL_NET_GDR_LEVEL nearer than every GPU's closest NIC: GPUDirect RDMA off for every GPU
    (nccl_rules/gdr.py gdr_on_path). None when set to nothing, allowed on some GPU, or undecidable."""
    env = _vars(inputs)
    raw = env.get("NCCL_NET_GDR_LEVEL")
    topo = inputs.get("gpu.topo")
    if raw is None or topo is None or topo.status != OK or not isinstance(topo.value, dict):
        return None
    legend = topo.value.get("nic_legend") or {}
    grace = topo.value.get("gpu_numa_id") or {}
    c2c = _c2c_param(env.get("NCCL_NET_GDR_C2C")) != 0
    bcm = _broadcom_switches(inputs)
    seen = []
    for gpu, row in (topo.value.get("matrix") or {}).items():
        nics = {k: v for k, v in row.items() if k.startswith(("NIC", "mlx")) or k in legend.values()}
        if not gpu.startswith("GPU") or not nics:
            continue
        path = nics[min(nics, key=lambda k: _rank(nics[k]))]
        seen.append((path, nccl_gdr.gdr_on_path(raw, path, version, grace=gpu in grace, bcm=bcm, c2c=c2c)))
    if not seen or any(ok is not False for _, ok in seen):
        return None
    paths = sorted({p for p, _ in seen})
    where = "a Grace GPU's NIC (P2C to NCCL)" if grace else f"every GPU's closest NIC ({'/'.join(paths)} in nvidia-smi topo -m)"
    return (f"NCCL_NET_GDR_LEVEL={raw} is nearer than {where}: NCCL {version or ''} disables GPUDirect RDMA "
            "for every GPU (graph/paths.cc ncclTopoCheckGdr: distance > level)").replace("NCCL  ", "NCCL ")


def _c2c_param(raw) -> int:
    """NCCL_NET_GDR_C2C as NCCL_PARAM reads it; 1 (its default from v2.27.3-1) when unset."""
    value = param_int(raw)
    return 1 if value is None else value


DERIVATIONS = {"gpudirect": gpudirect}
