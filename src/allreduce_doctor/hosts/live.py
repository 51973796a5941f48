"""LiveHost: the one module that touches /sys, /proc, /dev, /etc or starts a process."""

from __future__ import annotations

import ctypes
import errno
import glob as globmod
import itertools
import os
import selectors
import shutil
import signal
import socket
import subprocess
import threading
import time
from typing import IO, cast

from allreduce_doctor.hosts.base import (
    FILE_DENIED,
    FILE_ERROR,
    FILE_MISSING,
    FILE_OK,
    MAX_FILE_BYTES,
    CommandResult,
    FileResult,
    HostIdentity,
    ProcessInfo,
)
from allreduce_doctor.hosts.budget import OutputBudget
from allreduce_doctor.hosts.elf_exports import defined_exports
from allreduce_doctor.hosts.maps_scan import mapped_libs
from allreduce_doctor.redact import filter_env, keep_cmdline, redact_argv, redact_text

PROCESS_SCAN_REUSE_S = 30.0  # a scan of /proc answers every probe of one sample asked within this
MAX_OUTPUT_BYTES = 8 << 20  # stdout + stderr of one command; reading stops there and the group is killed
OUTPUT_OVER = "output over"
# Config files that may carry credentials next to NCCL settings are redacted on read.
REDACTED_FILES = ("/etc/nccl.conf",)


def _in_job_root(path: str) -> bool:
    """A file read through a job's /proc/PID/root or cwd (its NCCL config files): redacted too."""
    parts = path.split("/")
    return len(parts) > 3 and parts[1] == "proc" and parts[3] in ("root", "cwd")


class LiveHost:
    kind = "live"

    def __init__(self, budget: OutputBudget | None = None) -> None:
        self._sample = 0
        self._sample_time = time.monotonic()
        self._found: tuple[int, float, list[ProcessInfo]] | None = None  # (sample, when, processes)
        self.budget = budget or OutputBudget()  # every read and command of this run draws from it

    # --- identity -------------------------------------------------------------------
    def identity(self) -> HostIdentity:
        uname = os.uname()
        euid = os.geteuid()
        return HostIdentity(hostname=socket.gethostname(), kernel=uname.release, euid=euid, is_root=euid == 0)

    # --- files ----------------------------------------------------------------------
    def read(self, path: str) -> FileResult:
        path = os.path.expanduser(path)
        granted = self.budget.reserve(MAX_FILE_BYTES + 1)
        if not granted:
            return FileResult(path, FILE_ERROR, reason=self.budget.reason("not read"))
        result, size = _read_file(path, granted)
        if result.ok and size == granted <= MAX_FILE_BYTES:  # cut at the budget's last bytes
            result = FileResult(path, FILE_ERROR, reason=self.budget.reason("stopped reading"))
        self.budget.settle(granted, size if result.ok else 0)  # what is dropped is not held
        return result

    def glob(self, pattern: str) -> list[str]:
        return sorted(globmod.glob(os.path.expanduser(pattern)))

    def readlink(self, path: str) -> str | None:
        if not os.path.islink(path):
            return None
        return os.path.realpath(path)

    def which(self, name: str) -> str | None:
        return shutil.which(name)

    def elf_exports(self, path: str, prefix: str) -> list[str] | None:
        return defined_exports(path, prefix)

    # --- commands ---------------------------------------------------------------------
    def run(self, argv: list[str], timeout: float, key: str = "") -> CommandResult:
        if not isinstance(argv, (list, tuple)) or not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError("argv must be a non-empty list of strings")
        granted = self.budget.reserve(MAX_OUTPUT_BYTES)
        if not granted:
            return CommandResult(list(argv), None, error=self.budget.reason("not run"))
        used = 0
        try:
            result = run_bounded(list(argv), timeout, cap=granted)
            used = len(result.stdout) + len(result.stderr)
        finally:
            self.budget.settle(granted, used)
        if granted < MAX_OUTPUT_BYTES and result.error.startswith(OUTPUT_OVER):  # the budget's cap, not the command's
            result.error = self.budget.reason("stopped reading, killed")
        return result

    # --- processes --------------------------------------------------------------------
    def processes(self) -> list[ProcessInfo]:
        """Processes that map libnccl or carry NCCL_* variables, environments filtered. Several
        probes ask (the job's files, its libraries); one scan of /proc serves a sample."""
        found = self._found
        if found is not None and found[0] == self._sample and time.monotonic() - found[1] < PROCESS_SCAN_REUSE_S:
            return list(found[2])
        procs = self._scan_processes()
        self._found = (self._sample, time.monotonic(), procs)
        return list(procs)

    def _scan_processes(self) -> list[ProcessInfo]:
        import psutil  # lazy: only the live host needs it

        found: list[ProcessInfo] = []
        me = os.getpid()
        for proc in psutil.process_iter(["pid", "name", "cmdline"]):
            if proc.info["pid"] == me:
                continue
            try:
                env = proc.environ()
                readable = True
            except (psutil.AccessDenied, psutil.ZombieProcess, psutil.NoSuchProcess, OSError):
                env, readable = {}, False
            nccl_lib, rdma_libs, maps_cut, net_libs = mapped_libs(proc.info["pid"], self.budget)
            maps_nccl = bool(nccl_lib)
            if not maps_nccl and not any(k.startswith("NCCL_") for k in env):
                continue
            found.append(
                ProcessInfo(
                    pid=proc.info["pid"],
                    name=proc.info["name"] or "",
                    cmdline=redact_argv(proc.info["cmdline"] or [])[:64],
                    env=filter_env(env),
                    maps_nccl=maps_nccl,
                    nccl_lib=nccl_lib,
                    env_readable=readable,
                    rdma_libs=rdma_libs,
                    uid=_real_uid(proc),
                    maps_cut=maps_cut,
                    net_libs=net_libs,
                )
            )
        return found

    # --- samples ------------------------------------------------------------------------
    @property
    def sample(self) -> int:
        return self._sample

    def sample_time(self) -> float:
        return self._sample_time

    def next_sample(self, interval: float) -> None:
        remaining = self._sample_time + interval - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)
        self._sample += 1
        self._sample_time = time.monotonic()


def _read_file(path: str, limit: int) -> tuple[FileResult, int]:
    """At most `limit` bytes of one file, as text (config files with credentials redacted), and
    how many bytes were read."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit)
    except FileNotFoundError:
        return FileResult(path, FILE_MISSING, reason="no such file"), 0
    except PermissionError:
        return FileResult(path, FILE_DENIED, reason="permission denied (needs root)"), 0
    except IsADirectoryError:
        return FileResult(path, FILE_ERROR, reason="is a directory"), 0
    except OSError as err:
        name = errno.errorcode.get(err.errno or 0, "EIO")
        return FileResult(path, FILE_ERROR, reason=f"{name}: {err.strerror}"), 0
    if len(data) > MAX_FILE_BYTES:
        return FileResult(path, FILE_ERROR, reason=f"larger than {MAX_FILE_BYTES} bytes"), len(data)
    text = data.decode("utf-8", errors="replace")
    if path in REDACTED_FILES or path.endswith("nccl.conf") or _in_job_root(path):
        text = redact_text(text)
    elif path == "/proc/cmdline":
        text = keep_cmdline(text)
    return FileResult(path, FILE_OK, text=text), len(data)


def _real_uid(proc) -> int | None:
    try:
        return int(proc.uids().real)
    except Exception:  # noqa: BLE001 - psutil raises several kinds for a vanished or hidden process
        return None


# --- running a command: bounded output, bounded time, nothing left behind ----------------------
_READ_CHUNK = 1 << 16
_POLL_SECONDS = 0.05  # how often a command whose pipes stay open is checked for having exited
_SWEEP_SECONDS = 1.0  # how long leftovers are chased after a command ends
# Every process a command starts inherits this variable, so an orphan that left the process group
# (setsid) is still known as this command's when it is reparented to us.
RUN_TAG = "ALLREDUCE_DOCTOR_RUN"
# From include/uapi/linux/prctl.h (Linux >= 3.4): orphaned descendants are reparented to the
# nearest "child subreaper" ancestor instead of init, so we can find and kill them (prctl(2)).
PR_SET_CHILD_SUBREAPER = 36
_tags = itertools.count(1)
_running: set[int] = set()  # pids of commands still running: never swept as leftovers
_running_lock = threading.Lock()
_decoding = threading.Lock()
_subreaper: bool | None = None


def run_bounded(argv: list[str], timeout: float, cap: int = MAX_OUTPUT_BYTES,
                extra_env: dict[str, str] | None = None, on_stdout=None, stop=None, on_stop=None) -> CommandResult:
    """Run argv with at most `cap` bytes of output and `timeout` seconds; kill every leftover.
    `extra_env`: variables a launcher needs from the caller's environment (validate's srun/mpirun);
    `on_stdout(bytes)` sees stdout as it arrives; a set `stop` (threading.Event) ends it like the timeout;
    `on_stop(pid, wait, said)` runs first at the timeout, the stop or Ctrl-C (hosts/stopping.py)."""
    start = time.monotonic()
    become_subreaper()
    tag = f"{os.getpid()}-{next(_tags)}"
    env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "LC_ALL": "C", "LANG": "C",
           **(extra_env or {}), RUN_TAG: tag}
    try:
        proc = subprocess.Popen(  # noqa: S603 - argv list, no shell
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # own process group: killed whole at the end
            env=env,
        )
    except FileNotFoundError:
        return CommandResult(argv, None, error="not found", duration=time.monotonic() - start)
    except PermissionError:
        return CommandResult(argv, None, error="permission denied", duration=time.monotonic() - start)
    except OSError as exc:
        return CommandResult(argv, None, error=str(exc), duration=time.monotonic() - start)
    with _running_lock:
        _running.add(proc.pid)
    try:
        out, err, over, timed_out = _read_bounded(proc, start + timeout, cap, tag, on_stdout, stop, on_stop)
    finally:
        _sweep(proc, tag)
        with _running_lock:
            _running.discard(proc.pid)
        for pipe in _pipes(proc):
            pipe.close()
    with _decoding:  # one output at a time is held twice (its bytes and its text), never several
        stdout, out = out.decode("utf-8", errors="replace"), None
        stderr, err = err.decode("utf-8", errors="replace"), None
    return CommandResult(
        argv=argv,
        rc=None if timed_out or over else proc.returncode,
        stdout=stdout,
        stderr=stderr,
        duration=round(time.monotonic() - start, 4),
        timed_out=timed_out,
        error=f"{OUTPUT_OVER} {cap / (1 << 20):g} MiB (stopped reading, killed)" if over else "",
    )


def _read_bounded(proc: subprocess.Popen, deadline: float, cap: int, tag: str, on_stdout=None, stop=None, on_stop=None):
    """Read both pipes as data arrives until EOF, the cap, the deadline or `stop`: (out, err, over,
    timed_out), out and err the buffers themselves (decoded once by the caller, never copied)."""
    out_fd, err_fd = (pipe.fileno() for pipe in _pipes(proc))
    buffers = {out_fd: bytearray(), err_fd: bytearray()}
    size, swept = 0, False
    with selectors.DefaultSelector() as sel:
        for fd in buffers:
            sel.register(fd, selectors.EVENT_READ)

        def pump(until: float, stopping: bool) -> str:  # "eof", "exited" (stopping), "time", "over"
            nonlocal size, swept
            while sel.get_map():
                left = until - time.monotonic()
                if left <= 0 or (not stopping and stop is not None and stop.is_set()):
                    return "time"
                events = sel.select(min(left, _POLL_SECONDS))
                for key, _ in events:
                    data = os.read(key.fd, _READ_CHUNK)
                    if not data:
                        sel.unregister(key.fd)
                        continue
                    size += len(data)
                    buffers[key.fd] += data[: max(0, len(data) - (size - cap))] if size > cap else data
                    if on_stdout is not None and key.fd == out_fd:
                        on_stdout(data)
                    if size > cap:
                        return "over"
                if not events and proc.poll() is not None:
                    if stopping:
                        return "exited"
                    if not swept:
                        _sweep(proc, tag)  # the command is done; a leftover holds the pipes open
                        swept = True
            return "eof"

        def wait(seconds: float) -> bool:
            end = time.monotonic() + seconds
            return pump(end, True) in ("exited", "eof") and _exited(proc, end)

        def stopping() -> None:
            if on_stop is not None and proc.poll() is None:
                on_stop(proc.pid, wait, lambda: bytes(buffers[err_fd]))
        try:
            why = pump(deadline, False)
        except KeyboardInterrupt:
            stopping()  # a second Ctrl-C meanwhile goes straight on to the sweep
            raise
        if why != "eof":
            if why == "time":
                stopping()
            return buffers[out_fd], buffers[err_fd], why == "over", why == "time"
        exited = _exited(proc, deadline)  # the pipes closed: the command itself may still run
        if not exited:
            stopping()
    return buffers[out_fd], buffers[err_fd], False, not exited


def _pipes(proc: subprocess.Popen) -> tuple[IO[bytes], IO[bytes]]:
    """The command's stdout and stderr: both are PIPE (run_bounded), never None."""
    return cast(IO[bytes], proc.stdout), cast(IO[bytes], proc.stderr)


def _exited(proc: subprocess.Popen, until: float) -> bool:
    try:
        proc.wait(timeout=max(until - time.monotonic(), 0))
        return True
    except subprocess.TimeoutExpired:
        return False


def become_subreaper() -> bool:
    """Ask the kernel to reparent our orphaned descendants to us (once per process)."""
    global _subreaper
    if _subreaper is None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            _subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):  # not Linux, or no prctl
            _subreaper = False
    return _subreaper


def _sweep(proc: subprocess.Popen, tag: str) -> None:
    """Kill what the command left: its process group, and the orphans that carry its tag."""
    end = time.monotonic() + _SWEEP_SECONDS
    group = True
    killed: set[int] = set()
    while True:
        if proc.returncode is None:
            try:
                proc.wait(timeout=0 if group else 0.05)
            except subprocess.TimeoutExpired:
                pass
        if group:
            group = _signal_group(proc.pid, signal.SIGKILL)
        with _running_lock:
            busy = set(_running) - {proc.pid}
        for pid in _children_of(os.getpid()):
            if pid in busy or pid == proc.pid or pid in killed:
                continue
            stat = _stat(pid)
            if stat is not None and (stat[1] == proc.pid or _tagged(pid, tag)):
                _kill(pid)
                killed.add(pid)
        killed = {pid for pid in killed if not _reaped(pid)}
        if (not group and not killed and proc.returncode is not None) or time.monotonic() > end:
            return
        time.sleep(0.01)


def _signal_group(pgid: int, sig: int) -> bool:
    """Signal a process group; False once the group is gone."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # a setuid member: the rest of the group was still signalled
        return True


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reaped(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        return True


def _children_of(pid: int) -> list[int]:
    """Direct children: /proc/PID/task/*/children (CONFIG_PROC_CHILDREN), else a /proc scan."""
    files = globmod.glob(f"/proc/{pid}/task/*/children")
    if files:
        kids: list[int] = []
        for name in files:
            try:
                with open(name, "rb") as fh:
                    kids += [int(tok) for tok in fh.read().split()]
            except OSError:
                continue
        return kids
    found = []
    for entry in globmod.glob("/proc/[0-9]*"):
        other = int(entry.rsplit("/", 1)[-1])
        stat = _stat(other)
        if stat is not None and stat[0] == pid:
            found.append(other)
    return found


def _stat(pid: int) -> tuple[int, int] | None:
    """(ppid, pgid) from /proc/PID/stat (proc(5): fields 4 and 5, after the parenthesised name)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return int(fields[1]), int(fields[2])
    except (OSError, IndexError, ValueError):
        return None


def _tagged(pid: int, tag: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return f"{RUN_TAG}={tag}".encode() in fh.read(1 << 20).split(b"\0")
    except OSError:
        return False
