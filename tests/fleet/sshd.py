"""A throwaway sshd on 127.0.0.1 for the fleet tests: generated host and user keys in a temporary
folder, high ports, and an ssh_config whose Host aliases are the fleet's "nodes".

Ports (all on 127.0.0.1):
  main     normal logins; each alias may carry ALLREDUCE_DOCTOR_FLEET_REPLAY (SetEnv, accepted by
           AcceptEnv) so that the node answers from a scenario bundle (remote.py, test-only)
  garbage  every login runs `echo ...` instead of the command: a node that returns garbage
  hang     every login runs `sleep 600` (its pid noted, so stop() ends it): a node that hangs
  refused  nothing listens there: a node that refuses the connection
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd")
PRIVSEP_DIR = "/run/sshd"
GARBAGE = "this is not an allreduce-doctor bundle"


def sshd_path() -> str | None:
    found = shutil.which("sshd")
    return found or next((p for p in SSHD_CANDIDATES if os.access(p, os.X_OK)), None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Alias:
    name: str
    port: str = "main"  # main | garbage | hang | refused
    replay: str | None = None  # bundle path the node answers from


@dataclass
class TestSshd:
    root: Path
    aliases: list[Alias] = field(default_factory=list)
    ports: dict[str, int] = field(default_factory=dict)
    proc: subprocess.Popen | None = None

    @property
    def ssh_config(self) -> Path:
        return self.root / "ssh_config"

    def start(self) -> None:
        sshd = sshd_path()
        if sshd is None:
            raise RuntimeError("sshd is not installed (apt-get install openssh-server)")
        self.root.mkdir(parents=True, exist_ok=True)
        for name in ("host_key", "user_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.root / name)], check=True)
        (self.root / "authorized_keys").write_text((self.root / "user_key.pub").read_text())
        os.chmod(self.root / "authorized_keys", 0o600)
        self.ports = {kind: free_port() for kind in ("main", "garbage", "hang", "refused")}
        self._write_sshd_config()
        self._write_ssh_config()
        if os.geteuid() == 0:  # root's sshd wants its privilege separation folder (systemd makes it)
            os.makedirs(PRIVSEP_DIR, mode=0o755, exist_ok=True)
        self.proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(self.root / "sshd_config")],
                                     stdout=subprocess.DEVNULL, stderr=open(self.root / "sshd.log", "wb"))  # noqa: SIM115 (sshd's own)
        self._wait_ready()

    def _write_sshd_config(self) -> None:
        r, p = self.root, self.ports
        lines = [f"ListenAddress 127.0.0.1:{p[k]}" for k in ("main", "garbage", "hang")]
        lines += [
            f"HostKey {r / 'host_key'}", f"AuthorizedKeysFile {r / 'authorized_keys'}", f"PidFile {r / 'sshd.pid'}",
            "StrictModes no", "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
            "PermitRootLogin prohibit-password", "AcceptEnv ALLREDUCE_DOCTOR_FLEET_REPLAY", "LogLevel ERROR",
            f"AllowUsers {getpass.getuser()}",
            # The forced commands need no login setup: bash reads ~/.bashrc for an ssh session only below
            # SHLVL 2 (shell.c run_by_ssh), and a .bashrc that runs `pyenv init` rehashes on every login,
            # which concurrent logins race on ("pyenv: cannot rehash"): noise in what the node answered.
            f"Match LocalPort {p['garbage']}", "    SetEnv SHLVL=1", f"    ForceCommand echo {GARBAGE}",
            f"Match LocalPort {p['hang']}", "    SetEnv SHLVL=1",
            f"    ForceCommand echo $$ >> {r / 'hang.pids'}; exec sleep 600",
        ]
        (r / "sshd_config").write_text("\n".join(lines) + "\n")

    def _write_ssh_config(self) -> None:
        blocks = []
        for alias in self.aliases:
            blocks += [f"Host {alias.name}", f"    Port {self.ports[alias.port]}"]
            if alias.replay:
                blocks.append(f"    SetEnv ALLREDUCE_DOCTOR_FLEET_REPLAY={alias.replay}")
        blocks += [
            "Host *", "    HostName 127.0.0.1", f"    User {getpass.getuser()}",
            f"    IdentityFile {self.root / 'user_key'}", "    IdentitiesOnly yes",
            "    StrictHostKeyChecking no", f"    UserKnownHostsFile {self.root / 'known_hosts'}",
            "    LogLevel ERROR",
        ]
        self.ssh_config.write_text("\n".join(blocks) + "\n")

    def _wait_ready(self, seconds: float = 10.0) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {(self.root / 'sshd.log').read_text()[-500:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.ports["main"]), timeout=0.5) as sock:
                    if sock.recv(4).startswith(b"SSH-"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("sshd did not answer within 10s")

    def stop(self) -> None:
        pids = self.root / "hang.pids"  # the hanging "nodes" outlive their ssh client: end them by id
        for pid in pids.read_text().split() if pids.exists() else []:
            try:
                os.kill(int(pid), signal.SIGTERM)
            except (ProcessLookupError, PermissionError, ValueError):
                pass
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
