"""Named Python builtins: facts that only Python can observe (through the Host)."""

from __future__ import annotations

from collections.abc import Callable

from allreduce_doctor.domain import version_tuple
from allreduce_doctor.errors import ParseError
from allreduce_doctor.hosts.base import Host
from allreduce_doctor.observations import ERROR, MISSING, OK, Observation
from allreduce_doctor.parsers import parse
from allreduce_doctor.probes import builtins_net
from allreduce_doctor.probes.job_process import job_of as _job
from allreduce_doctor.probes.job_process import root_of as _root
from allreduce_doctor.probes.job_view import BUILTINS as JOB_VIEW
from allreduce_doctor.probes.permission import NEEDS_ROOT

SOURCE = "psutil: /proc/*/environ, /proc/*/maps"


def nccl_processes(host: Host) -> Observation:
    """Processes that map libnccl or carry NCCL_* variables; environments already filtered.

    Another user's /proc/PID/environ and maps are readable only with ptrace access to it
    (proc(5); fs/proc/base.c checks PTRACE_MODE_READ_FSCREDS), so a non-root user who finds no job
    has not seen the others' jobs: that is missing, not "no job running"."""
    procs = host.processes()
    value = [dict(p.to_dict(), nccl_version=_lib_version(p.nccl_lib)) for p in procs]
    unreadable = [p.pid for p in procs if not p.env_readable]
    if not procs and not host.identity().is_root:
        return Observation("", value, MISSING, SOURCE,
                           f"no NCCL job among this user's processes; other users' processes: {NEEDS_ROOT}")
    if unreadable:
        return Observation("", value, OK, SOURCE,
                           f"environment of pid {unreadable} not readable (run as the job's user or root)")
    return Observation("", value, OK, SOURCE, "")


def _lib_version(path: str) -> str | None:
    """'/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5' -> '2.21.5'. A bare libnccl.so.2 (the pip
    wheel's name) carries no full version: None, and the log's `NCCL version` line must say it."""
    name = str(path or "").rsplit("/", 1)[-1]
    _, sep, tail = name.partition("libnccl.so.")
    parts = tail.split(".")
    return tail if sep and len(parts) >= 3 and all(p.isdigit() for p in parts[:3]) else None


def _conf(host: Host, path: str, role: str) -> Observation:
    res = host.read(path)
    if not res.ok:
        return Observation("", None, MISSING, path, f"{role}: {res.reason}")
    try:
        return Observation("", parse("key_value", res.text or ""), OK, path, role)
    except ParseError as err:
        return Observation("", None, ERROR, path, f"{role}: {err}")


def nccl_conf_system(host: Host) -> Observation:
    """/etc/nccl.conf as the job sees it (through /proc/PID/root), NCCL's last file: it sets only
    what neither the environment nor the user's file set (src/misc/param.cc, setEnvFile uses
    setenv(..., 0))."""
    return _conf(host, f"{_root(_job(host.processes()))}/etc/nccl.conf", "/etc/nccl.conf")


def _home(host: Host, root: str, uid: int | None) -> str | None:
    """pw_dir of uid in the job's /etc/passwd: NCCL's userHomeDir() is getpwuid(getuid())->pw_dir."""
    res = host.read(f"{root}/etc/passwd")
    if uid is None or not res.ok:
        return None
    for line in (res.text or "").splitlines():
        fields = line.split(":")
        if len(fields) >= 6 and fields[2].strip() == str(uid):
            return fields[5]
    return None


def nccl_conf_user(host: Host) -> Observation:
    """The job user's NCCL file: NCCL_CONF_FILE when the job sets it (NCCL >= 2.23, src/misc/param.cc
    initEnvFunc; a relative path is the job's working directory's), else ~/.nccl.conf of the job's
    uid. Without a job, this tool's own ~/.nccl.conf."""
    job = _job(host.processes())
    if job is None:
        return _conf(host, "~/.nccl.conf", "~/.nccl.conf (no job found: this tool's user)")
    root = _root(job)
    named = job.env.get("NCCL_CONF_FILE", "")
    version = version_tuple(_lib_version(job.nccl_lib))
    if named and (version is None or version >= NCCL_CONF_FILE_SINCE):
        base = root if named.startswith("/") else f"/proc/{job.pid}/cwd/"
        return _conf(host, f"{base}{named}", f"NCCL_CONF_FILE={named}")
    home = _home(host, root, job.uid)
    if home is None:
        why = "the job's uid is not known" if job.uid is None else f"the home of the job's uid {job.uid} is not in its /etc/passwd"
        return Observation("", None, MISSING, f"{root}/etc/passwd", f"~/.nccl.conf: {why}")
    return _conf(host, f"{root}{home.rstrip('/')}/.nccl.conf", f"~/.nccl.conf of uid {job.uid}")


# NCCL reads NCCL_CONF_FILE from v2.23.4-1 on (src/misc/param.cc); before, always ~/.nccl.conf.
NCCL_CONF_FILE_SINCE = (2, 23)
# Where rdma-core installs libibverbs and its providers (Debian/Ubuntu multiarch, RHEL lib64):
# providers live in the libibverbs/ directory as lib<name>-rdmav<ABI>.so (rdma-core
# buildlib/rdma_functions.cmake, rdma_provider), a link to lib<name>.so.1 for mlx5 and efa.
LIB_DIRS = ("/usr/lib/*", "/usr/lib64", "/usr/lib", "/lib/*", "/lib64")
VERBS_FILES = ("libibverbs.so*", "libibverbs/lib*-rdmav*.so")


def job_rdma_userspace(host: Host) -> Observation:
    """The RDMA userspace of the job: the libraries its processes map (/proc/PID/maps, read with
    the process list), and the libibverbs and providers present in its filesystem
    (/proc/PID/root and its LD_LIBRARY_PATH). None for the files when /proc/PID/root is not
    readable (another user's process: ptrace access, proc(5))."""
    procs = host.processes()
    job = _job(procs)
    if job is None:
        return Observation("", None, MISSING, "/proc/PID/maps",
                           "no NCCL job on this node: the job's /proc/PID/maps decides whether its image has libibverbs")
    mapped = sorted({lib for p in procs for lib in p.rdma_libs})
    root = _root(job)
    files = None
    if host.glob(f"{root}/*"):
        dirs = [d.rstrip("/") for d in job.env.get("LD_LIBRARY_PATH", "").split(":") if d.startswith("/")]
        files = sorted({path[len(root):] for d in (*LIB_DIRS, *dirs[:16]) for name in VERBS_FILES
                        for path in host.glob(f"{root}{d}/{name}")})
    value = {"pid": job.pid, "mapped": mapped, "files": files, "root": root}
    reason = "" if files is not None else f"{root} not readable (run as the job's user or root)"
    return Observation("", value, OK, f"/proc/{job.pid}/maps, {root}", reason)


def host_identity(host: Host) -> Observation:
    return Observation("", host.identity().to_dict(), OK, "uname, geteuid")


BUILTINS: dict[str, Callable[[Host], Observation]] = {
    "nccl_processes": nccl_processes,
    "host_identity": host_identity,
    "nccl_conf_system": nccl_conf_system,
    "nccl_conf_user": nccl_conf_user,
    "job_rdma_userspace": job_rdma_userspace,
    "net_devices": builtins_net.net_devices,  # EFA devices, gVNIC netdevs
    "pci_network": builtins_net.pci_network,  # every PCI network function, its vendor and driver
    "job_net_plugin": lambda host: builtins_net.job_net_plugin(host, _job(host.processes())),
    **JOB_VIEW,  # the job's interfaces, /dev/infiniband, verbs config, limits (probes/job_view.py)
}
