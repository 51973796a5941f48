"""Builtins for NCCL's net plugins: the node's EFA devices and gVNIC netdevs (by their drivers),
and what of a plugin the job maps or holds (aws-ofi-nccl and libfabric, GPUDirect-TCPX/TCPXO).

Registered in builtins.BUILTINS, which hands over the job it picked (builtins._job).
"""

from __future__ import annotations

import re

from allreduce_doctor.hosts.base import Host, ProcessInfo
from allreduce_doctor.nccl_rules.plugin_abi import SYMBOL
from allreduce_doctor.observations import MISSING, OK, Observation

# Where a plugin and libfabric live: the multiarch and lib64 dirs, the EFA installer's
# /opt/amazon/efa/lib (libfabric) and /opt/amazon/ofi-nccl/lib (aws-ofi-nccl), the older
# /opt/aws-ofi-nccl/lib, GKE's /usr/local/nvidia/lib64 and the TCPX/TCPXO images' lib64 dirs.
LIB_DIRS = ("/usr/lib/*", "/usr/lib64", "/usr/lib", "/lib/*", "/lib64", "/usr/local/lib")
PLUGIN_DIRS = ("/opt/amazon/ofi-nccl/lib", "/opt/amazon/ofi-nccl/lib64", "/opt/aws-ofi-nccl/lib",
               "/opt/amazon/efa/lib", "/opt/amazon/efa/lib64", "/usr/local/nvidia/lib64",
               "/usr/local/tcpx/lib64", "/var/lib/tcpxo/lib64", "/opt/hpcx/nccl_rdma_sharp_plugin/lib")
# libfabric's DSO providers are lib<name>-fi.so in its libfabric/ dir (src/fabric.c ofi_ini_dir);
# the EFA installer builds efa into libfabric.so itself, which then links rdma-core's libefa.
FILES = ("libnccl-net*.so", "libfabric.so*", "libfabric/libefa-fi.so")
_CONF_DIR = re.compile(r"^\s*(/[^\s#]+)")


def net_devices(host: Host) -> Observation:
    """RDMA devices bound to the efa driver (/sys/class/infiniband/*/device/driver, EFA's own
    kernel driver drivers/infiniband/hw/efa) and netdevs bound to gve (Google's gVNIC)."""
    efa = [d.rsplit("/", 1)[-1] for d in host.glob("/sys/class/infiniband/*")
           if _driver(host, f"{d}/device/driver") == "efa"]
    gvnic = [n.rsplit("/", 1)[-1] for n in host.glob("/sys/class/net/*")
             if _driver(host, f"{n}/device/driver") == "gve"]
    return Observation("", {"efa": efa, "gvnic": gvnic}, OK, "/sys/class/{infiniband,net}/*/device/driver")


def pci_network(host: Host) -> Observation:
    """Every PCI network function (class 0x02xxxx: the PCI Code and ID Assignment Specification's
    network controllers, 0x0207 InfiniBand) with its vendor and bound driver, RDMA device or not:
    what tells a node whose RDMA driver is not loaded from one that has no RDMA hardware at all."""
    found = []
    listed = host.glob("/sys/bus/pci/devices/*")
    if not listed:  # every node lists its host bridge: an empty list is sysfs masked, not no NIC
        return Observation("", None, MISSING, "/sys/bus/pci/devices",
                           reason="/sys/bus/pci/devices lists no device (sysfs not mounted or masked)")
    for path in listed:
        klass = host.read(f"{path}/class")
        if not klass.ok or not (klass.text or "").strip().startswith("0x02"):
            if not klass.ok:
                found.append({"bdf": path.rsplit("/", 1)[-1], "class": None, "vendor": None, "driver": None})
            continue
        vendor = host.read(f"{path}/vendor")
        found.append({"bdf": path.rsplit("/", 1)[-1], "class": (klass.text or "").strip(),
                      "vendor": (vendor.text or "").strip() if vendor.ok else None,
                      "driver": _driver(host, f"{path}/driver")})
    return Observation("", found, OK, "/sys/bus/pci/devices/*/{class,vendor,driver}")


def _driver(host: Host, link: str) -> str | None:
    target = host.readlink(link)
    return target.rstrip("/").rsplit("/", 1)[-1] if target else None


def job_net_plugin(host: Host, job: ProcessInfo | None) -> Observation:
    """What the job maps of a net plugin and libfabric (/proc/PID/maps, with the process list),
    the plugin and libfabric files on its library path (/proc/PID/root: LD_LIBRARY_PATH, its
    /etc/ld.so.conf.d, the usual dirs) and its /dev/infiniband/uverbs* (EFA's device files).
    `mapped` is None when a scan was cut or the bundle predates it: not seen is not absent."""
    if job is None:
        return Observation("", None, MISSING, "/proc/PID/maps",
                           "no NCCL job on this node: the job's /proc/PID/maps tells which net plugin NCCL loaded")
    procs = [p for p in host.processes() if p.maps_nccl] or [job]
    scans = [p.net_libs for p in procs]
    mapped = None if any(s is None for s in scans) else sorted({lib for s in scans for lib in s or []})
    if mapped is not None and not any("libnccl-net" in m for m in mapped) and any(p.maps_cut for p in procs):
        mapped = None  # the plugin may sit past where the scan stopped
    root = f"/proc/{job.pid}/root"
    files = on_path = uverbs = opened = None
    if host.glob(f"{root}/*"):
        dirs = [d.rstrip("/") for d in job.env.get("LD_LIBRARY_PATH", "").split(":") if d.startswith("/")][:16]
        path_dirs = [*dirs, *_conf_dirs(host, root), *LIB_DIRS]
        files = sorted({p[len(root):] for d in (*path_dirs, *PLUGIN_DIRS) for name in FILES
                        for p in host.glob(f"{root}{d}/{name}")})
        # what NCCL's dlopen can find: a plugin on the loader's path, or NCCL_NET_PLUGIN's own path (2.21+)
        named = job.env.get("NCCL_NET_PLUGIN", "")
        per_dir = [[p[len(root):] for p in host.glob(f"{root}{d}/libnccl-net*.so")] for d in path_dirs]
        own = [named] if named.startswith("/") and host.glob(f"{root}{named}") else []
        on_path = sorted({p for found in per_dir for p in found} | set(own))
        uverbs = [p[len(root):] for p in host.glob(f"{root}/dev/infiniband/uverbs*")]
        opened = _opened([p for found in per_dir for p in found], own, named)
    plugins = [m for m in mapped or [] if "libnccl-net" in m]
    exports = {p: host.elf_exports(f"{root}{p}", SYMBOL) for p in dict.fromkeys(plugins + (opened or []))}
    value = {"pid": job.pid, "root": root, "mapped": mapped, "rdma_mapped": sorted({x for p in procs for x in p.rdma_libs}),
             "files": files, "plugin_on_path": on_path, "uverbs": uverbs, "opened": opened, "exports": exports}
    reason = "" if files is not None else f"{root} not readable (run as the job's user or root)"
    return Observation("", value, OK, f"/proc/{job.pid}/maps, {root}", reason)


def _opened(in_path_order: list[str], own: list[str], named: str) -> list[str]:
    """The file NCCL's dlopen finds for each name it tries, the first dir first (dlopen(3): the
    LD_LIBRARY_PATH dirs, then ld.so's cache and defaults): libnccl-net.so, or with NCCL_NET_PLUGIN
    set the name itself (a path, 2.21+) then libnccl-net-NAME.so (NVIDIA/nccl src/plugin/
    plugin_open.cc openPluginLib at v2.30.7-1; src/net.cc at v2.12-v2.26). From the globs the
    path scan already made, so an older bundle answers them too."""
    names = [n for n in named.split(",")[:2] if n and n.lower() != "none"] if named else []
    tries = [x for n in names for x in (n, f"libnccl-net-{n}.so")] if names else ["libnccl-net.so"]
    found = list(own)
    for name in tries:
        hit = next((p for p in in_path_order if "/" not in name and p.rsplit("/", 1)[-1] == name), None)
        if hit and hit not in found:
            found.append(hit)
    return found[:4]


def _conf_dirs(host: Host, root: str) -> list[str]:
    """The dirs the job's /etc/ld.so.conf.d/*.conf add to the loader's path (ldconfig(8))."""
    dirs: list[str] = []
    for conf in host.glob(f"{root}/etc/ld.so.conf.d/*.conf")[:32]:
        res = host.read(conf)
        dirs += [m.group(1).rstrip("/") for line in (res.text or "").splitlines()[:32] if res.ok
                 and (m := _CONF_DIR.match(line))]
    return dirs
