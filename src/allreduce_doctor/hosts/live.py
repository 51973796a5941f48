"""LiveHost: the one module that touches /sys, /proc, /dev, /etc or starts a process."""

from __future__ import annotations

import errno
import glob as globmod
import os
import shutil
import signal
import socket
import subprocess
import time

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
from allreduce_doctor.hosts.redact import filter_env, redact_text

MAX_OUTPUT_BYTES = 8 << 20  # a runaway command cannot fill memory
# Config files that may carry credentials next to NCCL settings are redacted on read.
REDACTED_FILES = ("/etc/nccl.conf",)


class LiveHost:
    kind = "live"

    def __init__(self) -> None:
        self._sample = 0
        self._sample_time = time.monotonic()

    # --- identity -------------------------------------------------------------------
    def identity(self) -> HostIdentity:
        uname = os.uname()
        euid = os.geteuid()
        return HostIdentity(hostname=socket.gethostname(), kernel=uname.release, euid=euid, is_root=euid == 0)

    # --- files ----------------------------------------------------------------------
    def read(self, path: str) -> FileResult:
        path = os.path.expanduser(path)
        try:
            with open(path, "rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return FileResult(path, FILE_MISSING, reason="no such file")
        except PermissionError:
            return FileResult(path, FILE_DENIED, reason="permission denied (needs root)")
        except IsADirectoryError:
            return FileResult(path, FILE_ERROR, reason="is a directory")
        except OSError as err:
            name = errno.errorcode.get(err.errno or 0, "EIO")
            return FileResult(path, FILE_ERROR, reason=f"{name}: {err.strerror}")
        if len(data) > MAX_FILE_BYTES:
            return FileResult(path, FILE_ERROR, reason=f"larger than {MAX_FILE_BYTES} bytes")
        text = data.decode("utf-8", errors="replace")
        if path in REDACTED_FILES or path.endswith("/.nccl.conf"):
            text = redact_text(text)
        return FileResult(path, FILE_OK, text=text)

    def glob(self, pattern: str) -> list[str]:
        return sorted(globmod.glob(os.path.expanduser(pattern)))

    def readlink(self, path: str) -> str | None:
        if not os.path.islink(path):
            return None
        return os.path.realpath(path)

    def which(self, name: str) -> str | None:
        return shutil.which(name)

    # --- commands ---------------------------------------------------------------------
    def run(self, argv: list[str], timeout: float, key: str = "") -> CommandResult:
        if not isinstance(argv, (list, tuple)) or not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError("argv must be a non-empty list of strings")
        start = time.monotonic()
        env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "LC_ALL": "C", "LANG": "C"}
        try:
            proc = subprocess.Popen(  # noqa: S603 - argv list, no shell
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # own process group: killed whole at the timeout
                env=env,
            )
        except FileNotFoundError:
            return CommandResult(list(argv), None, error="not found", duration=time.monotonic() - start)
        except PermissionError:
            return CommandResult(list(argv), None, error="permission denied", duration=time.monotonic() - start)
        except OSError as err:
            return CommandResult(list(argv), None, error=str(err), duration=time.monotonic() - start)
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            try:
                out, err = proc.communicate(timeout=2)
            except subprocess.TimeoutExpired:  # a grandchild holds the pipe open
                out, err = b"", b""
        return CommandResult(
            argv=list(argv),
            rc=None if timed_out else proc.returncode,
            stdout=out[:MAX_OUTPUT_BYTES].decode("utf-8", errors="replace"),
            stderr=err[:MAX_OUTPUT_BYTES].decode("utf-8", errors="replace"),
            duration=round(time.monotonic() - start, 4),
            timed_out=timed_out,
        )

    # --- processes --------------------------------------------------------------------
    def processes(self) -> list[ProcessInfo]:
        """Processes that map libnccl or carry NCCL_* variables, environments filtered."""
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
            maps_nccl = _maps_nccl(proc.info["pid"])
            if not maps_nccl and not any(k.startswith("NCCL_") for k in env):
                continue
            found.append(
                ProcessInfo(
                    pid=proc.info["pid"],
                    name=proc.info["name"] or "",
                    cmdline=[_redact_arg(a) for a in (proc.info["cmdline"] or [])][:64],
                    env=filter_env(env),
                    maps_nccl=maps_nccl,
                    env_readable=readable,
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


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _maps_nccl(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/maps", "rb") as fh:
            return b"libnccl" in fh.read(32 << 20)
    except OSError:
        return False


def _redact_arg(arg: str) -> str:
    from allreduce_doctor.hosts.redact import redact_value

    if "=" in arg:
        name, _, value = arg.partition("=")
        return f"{name}={redact_value(name.lstrip('-'), value)}"
    return redact_value("", arg)
