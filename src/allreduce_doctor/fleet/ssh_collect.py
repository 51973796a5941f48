"""Collect many nodes at once over SSH through ClusterShell.

Every node gets the same program on stdin (payload.py) and answers with its bundle on stdout
(remote.py's frame). A node that refuses the connection, hangs past the per-node timeout or
prints something that is not a bundle is reported by name with the reason; the others' bundles
stand. Bundles are written as NODE.tar.gz into a folder, the same layout `--snapshots` reads.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import os
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from ClusterShell.Event import EventHandler
from ClusterShell.NodeSet import NodeSet, NodeSetException
from ClusterShell.NodeUtils import GroupResolverError
from ClusterShell.Task import task_self

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.fleet.fleet_progress import ProgressBar
from allreduce_doctor.fleet.payload import remote_command, remote_script
from allreduce_doctor.fleet.remote import BEGIN, END, ERROR

# A refused node makes ClusterShell log "Broken pipe" warnings to stderr; each node
# failure is already reported by name in the result, so keep its log quiet.
logging.getLogger("ClusterShell").addHandler(logging.NullHandler())

SAFE_NODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]*")
SSH_FAILED = 255  # ssh's own exit code: connection, authentication or host key failures
NOT_FOUND = 127  # the shell found no such command (python3 missing)
MAX_ANSWER = 64 << 20  # stdout bytes kept per node: a bundle is ~50 KiB; past this it is garbage


@dataclass
class Collected:
    bundles: dict[str, Path] = field(default_factory=dict)  # node -> NODE.tar.gz
    failed: dict[str, str] = field(default_factory=dict)  # node -> why it gave no bundle


@dataclass
class SshOptions:
    fanout: int = 64
    timeout: float = 120.0  # per node, from the start of its ssh
    connect_timeout: int = 10
    ssh_options: str = ""  # extra ssh arguments, e.g. "-F fleet_ssh_config"
    python: str = "python3"
    interval: float = 1.0


def decode_frame(lines: list[bytes]) -> bytes:
    """The bundle bytes in a node's stdout lines; ValueError says what is wrong with them."""
    start = next((i for i, line in enumerate(lines) if line.startswith(BEGIN.encode())), None)
    if start is None:
        error = next((line for line in lines if line.startswith(ERROR.encode())), None)
        if error is not None:
            raise ValueError(error[len(ERROR):].decode("utf-8", "replace").strip())
        first = next((line for line in lines if line.strip()), b"")
        shown = first.decode("utf-8", "replace").strip()[:80]
        raise ValueError(f"returned no bundle (its output began: {shown!r})" if shown else "returned no output")
    parts = lines[start].decode("ascii", "replace").split()
    if len(parts) != 3 or not parts[1].isdigit():
        raise ValueError("returned a damaged bundle header")
    try:
        end = lines.index(END.encode(), start + 1)
    except ValueError:
        raise ValueError("returned a truncated bundle (no end marker)") from None
    try:
        data = base64.b64decode(b"".join(lines[start + 1:end]), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("returned a damaged bundle (not base64)") from None
    if len(data) != int(parts[1]) or hashlib.sha256(data).hexdigest() != parts[2]:
        raise ValueError("returned a damaged bundle (size or checksum differs)")
    return data


def failure_reason(rc: int | None, problem: str, stderr: list[str]) -> str:
    """One line for a node that gave no bundle: ssh's own words when ssh failed."""
    last = stderr[-1].strip() if stderr else ""
    if rc == SSH_FAILED:
        return f"ssh failed: {last or 'no message'}"
    if rc == NOT_FOUND:
        return f"python3 not found on the node (see --remote-python): {last}".rstrip(": ")
    tail = f"; stderr: {last[:200]}" if last and "no bundle" in problem else ""
    return f"{problem} (exit {rc}){tail}"


class _Handler(EventHandler):
    """ClusterShell events for one fan-out: gather stdout per node, turn each into a bundle."""

    def __init__(self, out_dir: Path, timeout: float, bar: ProgressBar) -> None:
        super().__init__()
        self.out_dir, self.timeout, self.bar = out_dir, timeout, bar
        self.stdout: dict[str, list[bytes]] = {}
        self.sizes: dict[str, int] = {}
        self.stderr: dict[str, deque] = {}
        self.result = Collected()

    def ev_read(self, worker, node, sname, msg) -> None:
        if sname == worker.SNAME_STDERR:
            self.stderr.setdefault(node, deque(maxlen=4)).append(msg.decode("utf-8", "replace"))
            return
        size = self.sizes.get(node, 0) + len(msg)
        self.sizes[node] = size
        if size <= MAX_ANSWER:  # past it, the node is sending garbage: stop keeping it
            self.stdout.setdefault(node, []).append(msg)

    def ev_hup(self, worker, node, rc) -> None:
        lines = self.stdout.pop(node, [])
        stderr = list(self.stderr.pop(node, []))
        try:
            if self.sizes.pop(node, 0) > MAX_ANSWER:
                raise ValueError(f"returned more than {MAX_ANSWER >> 20} MiB, more than any bundle")
            data = decode_frame(lines)
            self.result.bundles[node] = _write_bundle(self.out_dir, node, data)
        except ValueError as err:
            self.fail(node, failure_reason(rc, str(err), stderr))
        except OSError as err:  # disk full, permissions: this node's bundle is lost, not the run
            self.fail(node, f"its bundle could not be written to {self.out_dir} ({err.strerror or err})")
        self.bar.update(len(self.result.bundles), len(self.result.failed))

    def ev_close(self, worker, timedout) -> None:
        for node in worker.iter_keys_timeout():
            self.stdout.pop(node, None)
            self.sizes.pop(node, None)
            last = list(self.stderr.pop(node, []))[-1:]
            more = f" ({last[0].strip()[:200]})" if last else ""
            self.fail(node, f"timed out after {self.timeout:g}s{more}")

    def fail(self, node: str, reason: str) -> None:
        self.result.failed[node] = reason
        try:  # an older run's bundle must not pass for this one
            (self.out_dir / f"{node}.tar.gz").unlink(missing_ok=True)
        except OSError:
            pass


def _write_bundle(out_dir: Path, node: str, data: bytes) -> Path:
    path = out_dir / f"{node}.tar.gz"
    tmp = out_dir / f".{node}.tar.gz.part"
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


class _Tick(EventHandler):
    def __init__(self, bar: ProgressBar, result: Collected) -> None:
        super().__init__()
        self.bar, self.result = bar, result

    def ev_timer(self, timer) -> None:
        self.bar.update(len(self.result.bundles), len(self.result.failed))


def _nodeset(nodes: str) -> NodeSet:
    try:
        nodeset = NodeSet(nodes)
    except (NodeSetException, GroupResolverError) as err:
        raise DoctorError(f"--nodes {nodes!r}: {' '.join(str(err).split()) or 'not a node set'}") from None
    if len(nodeset) == 0:
        raise DoctorError(f"--nodes {nodes!r}: no nodes in that set")
    bad = [n for n in nodeset if not SAFE_NODE.fullmatch(n)]
    if bad:
        raise DoctorError(f"--nodes: {bad[0]!r} is not a host name")
    return nodeset


def collect_nodes(nodes: str, out_dir: Path, opts: SshOptions, progress: bool | None = None) -> Collected:
    """Collect every node of `nodes` (ClusterShell node set syntax) into out_dir/NODE.tar.gz."""
    nodeset = _nodeset(nodes)
    script = remote_script(opts.interval)
    task = task_self()
    task.set_info("fanout", opts.fanout)
    task.set_info("connect_timeout", opts.connect_timeout)
    task.set_info("ssh_options", opts.ssh_options or None)
    task.set_default("stdout_msgtree", False)  # the handler keeps what it needs, per node
    task.set_default("stderr_msgtree", False)
    bar = ProgressBar("collecting", len(nodeset), progress)
    handler = _Handler(out_dir, opts.timeout, bar)
    worker = task.shell(remote_command(opts.python), nodes=nodeset, handler=handler, timeout=opts.timeout, stderr=True)
    worker.write(script)
    worker.set_write_eof()
    bar.update(0)
    if bar.enabled:  # keep the elapsed time moving while nodes are slow to answer
        task.timer(0.5, handler=_Tick(bar, handler.result), interval=0.5, autoclose=True)
    try:
        task.resume()
    finally:
        bar.close()
    got = handler.result
    for node in nodeset:  # a node ClusterShell gave no event for still gets a line
        if node not in got.bundles and node not in got.failed:
            got.failed[node] = "no answer"
    return Collected({n: got.bundles[n] for n in nodeset if n in got.bundles},
                     {n: got.failed[n] for n in nodeset if n in got.failed})
