"""Derived facts of the job's view (probes/job_view.py): /dev/infiniband as the job sees it, its
memlock limit, and the verbs provider libibverbs would load for each RDMA device. Each is judged
on the job's process when one is found, else on the host, and the reason says which.
"""

from __future__ import annotations

import posixpath

from allreduce_doctor.domain import verbs_provider
from allreduce_doctor.observations import MISSING, OK, Observation

Inputs = dict[str, Observation]

# The rdma-core provider per kernel driver of the RDMA device's parent (/sys/class/infiniband/DEV/
# device/driver). libibverbs matches a provider by the kernel's driver id first, then by its PCI
# match table (rdma-core libibverbs/init.c try_drivers, match_driver_id; providers/*: VERBS_DRIVER_ID
# and VERBS_PCI_MATCH), never by the device's name, which rdma-core's udev rules may rename
# (kernel-boot/rdma-persistent-naming.rules, NAME_FALLBACK: rocep26s0f0). The parent is the PCI
# function the RDMA driver sits on: mlx5_ib on mlx5_core (drivers/infiniband/hw/mlx5/main.c),
# bnxt_re on bnxt_en (hw/bnxt_re/main.c: ibdev->dev.parent = &rdev->en_dev->pdev->dev), irdma on
# ice or i40e, hns on hns3, qedr on qede, ocrdma on be2net; efa, erdma, mana, cxgb4, vmw_pvrdma,
# ionic sit on their own PCI driver.
PROVIDER_BY_DRIVER = {
    "mlx5_core": "mlx5", "mlx4_core": "mlx4", "bnxt_en": "bnxt_re", "ice": "irdma", "i40e": "irdma",
    "irdma": "irdma", "efa": "efa", "hns3": "hns", "qede": "qedr", "erdma": "erdma", "mana": "mana",
    "cxgb4": "cxgb4", "vmw_pvrdma": "vmw_pvrdma", "be2net": "ocrdma", "ionic": "ionic",
    "hfi1": "hfi1verbs", "ib_qib": "ipathverbs", "ib_mthca": "mthca",
}
# Software devices (rdma_rxe, siw) take the parent of the netdev they sit on, another NIC's PCI
# function (drivers/infiniband/sw/siw/siw_main.c siw_device_create): their names decide.
SOFTWARE = ("rxe", "siw")
# NCCL's LL buffer, always in host memory and registered with ibv_reg_mr for each network connection
# (NVIDIA/nccl src/transport/net.cc at v2.30.7-1: `p != NCCL_PROTO_LL && useGdr`; src/include/
# device.h: 8 lines x 512 threads x NCCL_STEPS 8 x 16 bytes). A memlock limit below one of them
# cannot pin it without CAP_IPC_LOCK (kernel drivers/infiniband/core/umem.c ib_umem_get:
# `if (new_pinned > lock_limit && !capable(CAP_IPC_LOCK)) ret = -ENOMEM`); rdma-core itself warns
# at 32 KiB (libibverbs/init.c check_memlock_limit).
LL_BUFFER = 8 * 512 * 8 * 16


def provider_for(device: str, driver: str | None) -> tuple[str | None, str]:
    """(the provider libibverbs loads for the device, what decided it)."""
    name = str(device or "")
    if name.startswith(SOFTWARE):
        return verbs_provider(name), "its name (a software device)"
    base = str(driver or "").split(".", 1)[0]  # mlx5_core.sf: a sub-function's auxiliary driver
    if base in PROVIDER_BY_DRIVER:
        return PROVIDER_BY_DRIVER[base], f"its kernel driver {driver}"
    return verbs_provider(name), "its name" + ("" if driver is None else f" (kernel driver {driver} not in the table)")


def device_providers(inputs: Inputs) -> tuple[dict[str, list[str]], list[str]]:
    """({provider: [devices]}, [devices whose provider is unknown]) of the node's RDMA ports."""
    ports = inputs["rdma.ports"].value if inputs["rdma.ports"].status == OK else []
    drivers_obs = inputs.get("rdma.device_drivers")
    drivers = drivers_obs.value if drivers_obs is not None and drivers_obs.status == OK else {}
    needed: dict[str, list[str]] = {}
    unknown = []
    for dev in sorted({str(r.get("device")) for r in ports or [] if r.get("device")}):
        provider, _ = provider_for(dev, (drivers or {}).get(dev))
        if provider:
            needed.setdefault(provider, []).append(dev)
        else:
            unknown.append(dev)
    return needed, unknown


def _provider_name(entry: str) -> str:
    """'mlx5' / '/usr/lib/x86_64-linux-gnu/libmlx5' -> 'mlx5' (dynamic_driver.c load_driver: a
    path is opened as PATH + the suffix, a name as lib<NAME>-rdmav<ABI>.so)."""
    base = posixpath.basename(entry.strip())
    return base[3:] if entry.strip().startswith("/") and base.startswith("lib") else base


def configured_providers(inputs: Inputs) -> set[str] | None:
    """The providers the job's libibverbs loads: /etc/libibverbs.d's `driver` lines and
    RDMAV_DRIVERS / IBV_DRIVERS (dynamic_driver.c load_drivers). None when not read."""
    obs = inputs.get("rdma.job_verbs_config")
    if obs is None or obs.status != OK or obs.value.get("files") is None:
        return None
    names = {_provider_name(n) for listed in obs.value["files"].values() for n in listed}
    for text in (obs.value.get("env") or {}).values():
        names |= {_provider_name(n) for n in str(text).replace(";", ":").split(":") if n.strip()}
    return names


def rdma_devices_seen(inputs: Inputs) -> Observation:
    """/dev/infiniband/uverbs* where NCCL opens them: the job's mount namespace, else (no job, or
    its root not readable) this tool's own /dev, which says nothing of a container's."""
    job, host = inputs["rdma.job_uverbs"], inputs["rdma.uverbs"]
    if job.status == OK:
        devices = job.value.get("devices") or []
        where = f"the job's /proc/{job.value.get('pid')}/root/dev/infiniband"
        seen = f"{where}: {', '.join(devices)}" if devices else f"{where} has no uverbs* device"
        if not devices and host.status == OK and host.value:
            seen += " (this node's /dev/infiniband has them)"
        return Observation("", {"present": bool(devices), "from": "job", "devices": devices}, OK, reason=seen)
    if host.status != OK:
        return Observation("", None, MISSING, reason=f"rdma.uverbs: {host.reason or host.status}; "
                                                     f"the job's: {job.reason or job.status}")
    return Observation("", {"present": bool(host.value), "from": "host", "devices": None}, OK,
                       reason=f"judged on this node's /dev/infiniband instead of the job's ({job.reason or job.status})")


def _size(value) -> str:
    if value == "unlimited":
        return "unlimited"
    return f"{value >> 10} KiB" if isinstance(value, int) and value < 1 << 20 else f"{value / (1 << 20):g} MiB"


def job_memlock(inputs: Inputs) -> Observation:
    """Whether the job can pin NCCL's buffers: an unlimited RLIMIT_MEMLOCK or CAP_IPC_LOCK; a
    limit below one LL buffer (512 KiB) without CAP_IPC_LOCK cannot; a larger finite limit may not
    suffice (NCCL registers one per connection and channel, and more without GPUDirect): unknown.
    This tool's own limit says nothing of the job's: without a job it is unknown."""
    obs = inputs["job.limits"]
    if obs.status != OK:
        return Observation("", None, MISSING, reason=f"the job's memlock limit was not read ({obs.reason or obs.status})")
    soft, held, user_ns = obs.value.get("memlock_soft"), obs.value.get("cap_ipc_lock"), obs.value.get("user_ns")
    shown = "unread" if soft is None else _size(soft)
    # ib_umem_get (drivers/infiniband/core/umem.c) and mlock (mm/mlock.c can_do_mlock, do_mlock)
    # pin beyond RLIMIT_MEMLOCK only when capable(CAP_IPC_LOCK), which asks the initial
    # user namespace (kernel/capability.c): CapEff in a child user namespace does not lift the limit.
    cap = held if not held else {"initial": True, "child": False}.get(user_ns)
    value = {"memlock": shown, "cap_ipc_lock": held, "user_ns": user_ns, "pid": obs.value.get("pid")}
    if cap:
        lock = "CAP_IPC_LOCK"
    elif held and user_ns == "child":
        lock = "CAP_IPC_LOCK only in a child user namespace (uid_map), which does not lift the limit"
    elif held:
        lock = "CAP_IPC_LOCK, its user namespace unread (uid_map)"
    else:
        lock = "no CAP_IPC_LOCK" if held is False else "CAP_IPC_LOCK unread"
    read = f"/proc/{value['pid']}/limits, status, uid_map" if value["pid"] is not None else obs.source  # a paste: its lines
    reason = f"the job's memlock limit {shown}, {lock} ({read})"
    if cap or soft == "unlimited":
        problem = False
    elif cap is None or soft is None:
        problem = None
    elif soft < LL_BUFFER:
        problem = True
        reason += ": ibv_reg_mr cannot pin one of NCCL's 512 KiB LL buffers"
    else:
        problem = None
        reason += ": NCCL registers a 512 KiB LL buffer per connection and channel, more without GPUDirect; unlimited is safe"
    return Observation("", dict(value, problem=problem), OK, reason=reason)


DERIVATIONS = {"rdma_devices_seen": rdma_devices_seen, "job_memlock": job_memlock}
