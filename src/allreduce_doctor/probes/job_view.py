"""The node as the running job sees it: NCCL runs in the job's mount and network namespaces, so
its interfaces, /dev/infiniband, verbs configuration, memlock limit and capabilities are read
from the job's process (/proc/PID/...), never from this tool's own namespaces. Without a job each
fact is missing, and its derivation (probes/derive_job_view.py) falls back to the host and says so.
"""

from __future__ import annotations

import posixpath

from allreduce_doctor.hosts.base import Host
from allreduce_doctor.observations import MISSING, OK, Observation
from allreduce_doctor.probes.job_process import job_of, root_of

NO_JOB = "no NCCL job found on this node"
# The variables libibverbs reads for providers to load beside its config files (rdma-core
# libibverbs/dynamic_driver.c load_drivers: RDMAV_DRIVERS, else IBV_DRIVERS, split at ':' ';').
DRIVER_VARS = ("RDMAV_DRIVERS", "IBV_DRIVERS")
CAP_IPC_LOCK = 14  # include/uapi/linux/capability.h; capabilities(7)


def _find(host: Host):
    job = job_of(host.processes())
    return job, (f"/proc/{job.pid}" if job else "")


def job_net_ifaces(host: Host) -> Observation:
    """The interfaces of the job's network namespace: /proc/PID/net/dev lists the netns of the
    process (network_namespaces(7)), the interfaces NCCL's getifaddrs() walks (NVIDIA/nccl
    src/misc/socket.cc ncclFindInterfaces; src/os/linux.cc at v2.30)."""
    job, proc = _find(host)
    if job is None:
        return Observation("", None, MISSING, "/proc/PID/net/dev", NO_JOB)
    res = host.read(f"{proc}/net/dev")
    if not res.ok:
        return Observation("", None, MISSING, f"{proc}/net/dev", f"the job's /proc/{job.pid}/net/dev: {res.reason}")
    # Two header lines, then "  eth0: <16 counters>" (net/core/net-procfs.c dev_seq_show)
    names = [line.split(":", 1)[0].strip() for line in (res.text or "").splitlines()[2:] if ":" in line]
    value = {"pid": job.pid, "names": names, **_addresses(host, proc)}
    return Observation("", value, OK, f"{proc}/net/dev, {proc}/net/if_inet6, {proc}/net/route, {proc}/net/fib_trie")


IPV6_LOOPBACK = "0" * 31 + "1"
RTF_GATEWAY = 0x0002  # include/uapi/linux/route.h


def _addresses(host: Host, proc: str) -> dict:
    """Which interfaces of the job's netns have an address NCCL can take (each None when its file
    is unread). NCCL lists only interfaces with an AF_INET or AF_INET6 address, IPv6 loopback
    left out (src/misc/socket.cc ncclFindInterfaces). IPv6: /proc/PID/net/if_inet6, one address a
    line ending with the device (net/ipv6/addrconf.c if6_seq_show). IPv4 has no per-interface
    file: an interface with a route in /proc/PID/net/route (net/ipv4/fib_trie.c
    fib_route_seq_show: Iface, Destination, Gateway, Flags, ..., Mask, in host byte order) has
    one; `stray_ipv4` are the local addresses of /proc/PID/net/fib_trie ("/32 host LOCAL",
    fib_trie_seq_show) that no connected route covers, which may belong to any interface."""
    out: dict = {"ipv6": None, "ipv4_routed": None, "stray_ipv4": None}
    inet6 = host.read(f"{proc}/net/if_inet6")
    if inet6.ok:
        out["ipv6"] = sorted({f[5] for f in (line.split() for line in (inet6.text or "").splitlines())
                              if len(f) == 6 and f[0] != IPV6_LOOPBACK})
    route, trie = host.read(f"{proc}/net/route"), host.read(f"{proc}/net/fib_trie")
    connected: list[tuple[int, int]] = []
    if route.ok:
        routed = set()
        for line in (route.text or "").splitlines()[1:]:
            f = line.split()
            try:
                dest, flags, mask = int(f[1], 16), int(f[3], 16), int(f[7], 16)
            except (IndexError, ValueError):
                continue
            routed.add(f[0])
            if not flags & RTF_GATEWAY and mask:
                connected.append((dest, mask))
        out["ipv4_routed"] = sorted(routed)
    if route.ok and trie.ok:
        out["stray_ipv4"] = sorted(a for a in _local_ipv4(trie.text or "")
                                   if not a.startswith("127.") and not any(_host_order(a) & m == d for d, m in connected))
    return out


def _local_ipv4(text: str) -> set[str]:
    """The addresses fib_trie lists as "/32 host LOCAL" (each under its "|-- A.B.C.D" line)."""
    found, last = set(), None
    for line in text.splitlines():
        item = line.strip()
        if item.startswith("|-- "):
            last = item[4:].strip()
        elif item.startswith("/32 host LOCAL") and last:
            found.add(last)
    return found


def _host_order(address: str) -> int:
    """A dotted IPv4 address as /proc/net/route prints a __be32 (%08X of its value on a
    little-endian host: x86_64 and aarch64 Linux)."""
    parts = [int(p) for p in address.split(".")]
    return parts[0] | parts[1] << 8 | parts[2] << 16 | parts[3] << 24


def job_uverbs(host: Host) -> Observation:
    """/dev/infiniband/uverbs* in the job's mount namespace, where libibverbs opens them
    (rdma-core libibverbs/device.c, util/open_cdev.c: RDMA_CDEV_DIR "/dev/infiniband")."""
    job, _ = _find(host)
    if job is None:
        return Observation("", None, MISSING, "/proc/PID/root/dev/infiniband", NO_JOB)
    root = root_of(job)
    if not host.glob(f"{root}/*"):
        return Observation("", None, MISSING, f"{root}/dev/infiniband",
                           f"{root} not readable (run as the job's user or root)")
    found = [posixpath.basename(p) for p in host.glob(f"{root}/dev/infiniband/uverbs*")]
    return Observation("", {"pid": job.pid, "devices": found}, OK, f"{root}/dev/infiniband")


def _limit(value: str) -> int | str | None:
    value = value.strip()
    return "unlimited" if value == "unlimited" else (int(value) if value.isdigit() else None)


def job_limits(host: Host) -> Observation:
    """The job's RLIMIT_MEMLOCK (/proc/PID/limits, "Max locked memory", fs/proc/base.c
    proc_pid_limits) and whether CAP_IPC_LOCK is in its effective set (/proc/PID/status CapEff,
    proc(5)): ibv_reg_mr pins beyond the limit only with CAP_IPC_LOCK (kernel
    drivers/infiniband/core/umem.c ib_umem_get), and only in the initial user namespace
    (/proc/PID/uid_map: user_ns_of)."""
    job, proc = _find(host)
    if job is None:
        return Observation("", None, MISSING, "/proc/PID/limits", NO_JOB)
    limits, status = host.read(f"{proc}/limits"), host.read(f"{proc}/status")
    soft = hard = cap = None
    for line in (limits.text or "").splitlines() if limits.ok else ():
        if line.startswith("Max locked memory"):
            fields = line[len("Max locked memory"):].split()
            soft, hard = (_limit(f) for f in (fields + ["", ""])[:2])
    for line in (status.text or "").splitlines() if status.ok else ():
        if line.startswith("CapEff:"):
            try:
                cap = bool(int(line.split(":", 1)[1].strip(), 16) >> CAP_IPC_LOCK & 1)
            except ValueError:
                cap = None
    if soft is None and cap is None:
        why = limits.reason if not limits.ok else "no Max locked memory line"
        return Observation("", None, MISSING, f"{proc}/limits", f"the job's /proc/{job.pid}/limits: {why}")
    uid_map = host.read(f"{proc}/uid_map")
    value = {"pid": job.pid, "memlock_soft": soft, "memlock_hard": hard, "cap_ipc_lock": cap,
             "user_ns": user_ns_of(uid_map.text or "") if uid_map.ok else None}
    return Observation("", value, OK, f"{proc}/limits, {proc}/status, {proc}/uid_map")


# The initial user namespace maps every uid onto itself: one line "0 0 4294967295"
# (user_namespaces(7), "The initial user namespace"; kernel/user.c init_user_ns uid_map).
INITIAL_UID_MAP = ["0", "0", "4294967295"]


def user_ns_of(uid_map: str) -> str | None:
    """'initial' when /proc/PID/uid_map is the initial user namespace's identity map, 'child' for
    any other map (a rootless or userns-remapped container), None when the text is not a uid_map.
    A capability held in a child user namespace does not count where the kernel asks capable()
    (kernel/capability.c: capable(cap) is ns_capable(&init_user_ns, cap))."""
    rows = [line.split() for line in uid_map.splitlines() if line.strip()]
    if not rows or any(len(r) != 3 or not all(f.isdigit() for f in r) for r in rows):
        return None
    return "initial" if rows == [INITIAL_UID_MAP] else "child"


def _driver_names(text: str) -> list[str]:
    """The `driver NAME` lines of a libibverbs.d file (rdma-core dynamic_driver.c read_config_file:
    leading blanks skipped, # comments; a NAME may be a path, loaded as NAME + the provider suffix)."""
    names = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "driver":
            names.append(fields[1])
    return names


def job_verbs_config(host: Host) -> Observation:
    """The providers the job's libibverbs is configured to load: every regular file of its
    /etc/libibverbs.d (rdma-core dynamic_driver.c read_config, IBV_CONFIG_DIR; rdma-core installs
    one NAME.driver per provider, buildlib/rdma_functions.cmake) and RDMAV_DRIVERS / IBV_DRIVERS
    in its environment. None for the files when the job's root is not readable."""
    job, _ = _find(host)
    if job is None:
        return Observation("", None, MISSING, "/proc/PID/root/etc/libibverbs.d", NO_JOB)
    root = root_of(job)
    files = None
    if host.glob(f"{root}/*"):
        files = {}
        for path in host.glob(f"{root}/etc/libibverbs.d/*"):
            res = host.read(path)
            if res.ok:
                files[posixpath.basename(path)] = _driver_names(res.text or "")
    env = {k: job.env[k] for k in DRIVER_VARS if job.env.get(k)}
    value = {"pid": job.pid, "files": files, "env": env}
    return Observation("", value, OK, f"{root}/etc/libibverbs.d",
                       "" if files is not None else f"{root} not readable (run as the job's user or root)")


def rdma_device_drivers(host: Host) -> Observation:
    """The kernel driver of each RDMA device's parent (/sys/class/infiniband/DEV/device/driver):
    libibverbs matches a provider to a device by the kernel's driver, never by the device's name,
    which rdma-core's udev rules may rename (kernel-boot/rdma-persistent-naming.rules)."""
    devices = [posixpath.basename(p) for p in host.glob("/sys/class/infiniband/*")]
    drivers = {}
    for dev in devices:
        target = host.readlink(f"/sys/class/infiniband/{dev}/device/driver")
        drivers[dev] = posixpath.basename(target.rstrip("/")) if target else None
    return Observation("", drivers, OK, "/sys/class/infiniband/*/device/driver")


BUILTINS = {
    "job_net_ifaces": job_net_ifaces,
    "job_uverbs": job_uverbs,
    "job_limits": job_limits,
    "job_verbs_config": job_verbs_config,
    "rdma_device_drivers": rdma_device_drivers,
}
