"""The node's side of `fleet`: run the normal `collect` and stream the bundle back on stdout.

It runs under `python3 -I -S -` from the payload (payload.py): the standard library plus the
modules shipped in the payload, nothing from the node's site-packages. Its stdout is one frame:

    ALLREDUCE-DOCTOR-BUNDLE <size> <sha256>
    <the .tar.gz in base64, in lines>
    ALLREDUCE-DOCTOR-END

or one line `ALLREDUCE-DOCTOR-ERROR <message>`. Anything printed before the frame (a login
banner from a shell rc file) is ignored by the reader (ssh_collect.py).

Test-only: when ALLREDUCE_DOCTOR_FLEET_REPLAY names a bundle on the node, the node answers from
that bundle instead of its live state. tests/fleet pass it per ssh alias (ssh_config `SetEnv`,
accepted by the test sshd's `AcceptEnv`); production sshd configs do not accept it.
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys

from allreduce_doctor.hosts.base import ProcessInfo
from allreduce_doctor.hosts.live import LiveHost
from allreduce_doctor.redact import filter_env, redact_argv

BEGIN = "ALLREDUCE-DOCTOR-BUNDLE"
END = "ALLREDUCE-DOCTOR-END"
ERROR = "ALLREDUCE-DOCTOR-ERROR"
REPLAY_ENV = "ALLREDUCE_DOCTOR_FLEET_REPLAY"
LINE_CHARS = 16384  # base64 characters per line: few lines, each well under any line limit


class NodeHost(LiveHost):
    """LiveHost whose process list also works without psutil (never importable under -S).

    The fallback reads /proc through LiveHost.read and glob, so the live host stays the only
    door to the node; a maps file over LiveHost's read limit counts as "libnccl not seen".
    """

    def processes(self) -> list[ProcessInfo]:
        try:
            return super().processes()
        except ModuleNotFoundError as err:
            if err.name != "psutil":
                raise
        return self._scan_proc()

    def _scan_proc(self) -> list[ProcessInfo]:
        found = []
        for entry in self.glob("/proc/[0-9]*"):
            pid = entry.rsplit("/", 1)[-1]
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            environ = self.read(f"{entry}/environ")
            env = _environ(environ.text) if environ.ok else {}
            maps_nccl = False
            if not any(k.startswith("NCCL_") for k in env):
                maps = self.read(f"{entry}/maps")
                maps_nccl = maps.ok and "libnccl" in (maps.text or "")
                if not maps_nccl:
                    continue
            cmdline = self.read(f"{entry}/cmdline")
            argv = [a for a in (cmdline.text or "").split("\0") if a] if cmdline.ok else []
            comm = self.read(f"{entry}/comm")
            found.append(ProcessInfo(pid=int(pid), name=(comm.text or "").strip() if comm.ok else "",
                                     cmdline=redact_argv(argv)[:64], env=filter_env(env),
                                     maps_nccl=maps_nccl, env_readable=environ.ok))
        return found


def _environ(text: str | None) -> dict[str, str]:
    pairs = (item.partition("=") for item in (text or "").split("\0") if "=" in item)
    return {name: value for name, _, value in pairs}


def _host():
    replay = os.environ.get(REPLAY_ENV)
    if replay:  # test-only: see the module docstring
        from allreduce_doctor.hosts.snapshot import SnapshotHost

        return SnapshotHost(replay)
    return NodeHost()


def frame(data: bytes) -> str:
    """The stdout frame for a bundle's bytes."""
    text = base64.b64encode(data).decode("ascii")
    lines = [f"{BEGIN} {len(data)} {hashlib.sha256(data).hexdigest()}"]
    lines += [text[i:i + LINE_CHARS] for i in range(0, len(text), LINE_CHARS)]
    lines.append(END)
    return "\n".join(lines) + "\n"


def _error(message: str, code: int) -> int:
    sys.stdout.write(f"{ERROR} {' '.join(message.split())}\n")
    return code


def main(tmp: str, interval: float) -> int:
    """Collect this node into `tmp` and print the frame; 0 on success."""
    from allreduce_doctor.capture import record
    from allreduce_doctor.errors import DoctorError
    from allreduce_doctor.status import EXIT_HEALTHY, error_exit

    try:
        path, _ = record(_host(), os.path.join(tmp, "node.tar.gz"), interval)
        with open(path, "rb") as fh:
            data = fh.read()
    except DoctorError as err:
        return _error(str(err), error_exit(err))
    except Exception as err:  # noqa: BLE001 - reported by name to the fleet, never a traceback
        return _error(f"internal error: {type(err).__name__}: {err}", error_exit(err))
    sys.stdout.write(frame(data))
    sys.stdout.flush()
    return EXIT_HEALTHY
