"""A pool of forked workers for the fleet: every core busy, results streamed, memory bounded.

The parent hands out small chunks of (node, bundle) items; each chunk runs in a freshly forked
child (it inherits the loaded Doctor, nothing is pickled) that writes one JSON line per node
and exits. A child therefore lives for at most CHUNK bundles: whatever one bundle's diagnosis
leaves allocated is returned to the system when the chunk ends, and an address-space limit
(WORKER_MEMORY) turns a runaway bundle into that node's error instead of the machine's OOM
killer. Small chunks also balance the load: a slow bundle holds up one chunk, not 1/jobs of
the fleet. A child that dies (a signal, the memory limit, a crash in C code) costs only the
node it was on: that node is reported by name and the rest of its chunk is handed out again.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path

CHUNK = 32  # most bundles one child diagnoses before it exits (bounds what it can accumulate)
# Fewest bundles a child is forked for, when there are that many per worker: a child's first touch of
# the memory it shares with the parent costs ~18 ms of CPU (copy-on-write faults, measured on a
# 16-node fleet: 28.6 ms per bundle in chunks of 2, 24.5 in chunks of 8), a bundle ~20 ms.
MIN_CHUNK = 8
WORKER_MEMORY = 2 << 30  # address-space limit of a child (bytes); one diagnosis needs ~100 MB
DIED = "the diagnosis worker process died"

Work = Callable[[str, Path], dict]


def available_cores() -> int:
    """The cores this process may run on (a Slurm or cgroup cpuset can be fewer than the machine's)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def chunk_size(items: int, jobs: int) -> int:
    """About four chunks per worker (load balance), at most CHUNK bundles each (memory), and at
    least MIN_CHUNK where every worker still gets one (a fork is worth a few bundles)."""
    per_worker = -(-items // jobs)
    return max(1, min(CHUNK, max(min(MIN_CHUNK, per_worker), -(-items // (jobs * 4)))))


def run_forked(items: list[tuple[str, Path]], work: Work, jobs: int) -> Iterator[dict]:
    """work(node, bundle) over `items` in up to `jobs` forked children; each result as it comes."""
    size = chunk_size(len(items), jobs)
    todo = deque(items[i:i + size] for i in range(0, len(items), size))
    running: dict[int, _Child] = {}  # read fd -> child
    selector = selectors.DefaultSelector()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        while todo or running:
            while todo and len(running) < jobs:
                child = _Child.start(todo.popleft(), work)
                running[child.fd] = child
                selector.register(child.fd, selectors.EVENT_READ)
            for key, _ in selector.select():
                child = running[key.fd]
                yield from child.read()
                if child.open:
                    continue
                selector.unregister(child.fd)
                del running[child.fd]
                culprit, rest = child.finish()
                if culprit is not None:
                    yield {"node": culprit, "error": f"{DIED} ({child.how})"}
                if rest:
                    todo.appendleft(rest)
    finally:  # left early (an error, an interrupt): stop the children still working
        for child in running.values():
            child.kill()
        selector.close()


class _Child:
    def __init__(self, pid: int, fd: int, chunk: list[tuple[str, Path]]):
        self.pid, self.fd = pid, fd
        self.pending = [node for node, _ in chunk]  # in the order the child answers them
        self.by_node = dict(chunk)
        self.partial = b""
        self.open = True
        self.how = ""

    @classmethod
    def start(cls, chunk: list[tuple[str, Path]], work: Work) -> _Child:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: results as JSON lines, then leave without the parent's exit code
            os.close(read_fd)
            code = 0
            try:
                _limit_memory()
                with os.fdopen(write_fd, "w", encoding="utf-8") as out:
                    for node, bundle in chunk:
                        out.write(json.dumps(safely(work, node, bundle), default=str) + "\n")
                        out.flush()  # stream: the parent reports each node as it is done
            except BaseException:  # noqa: BLE001 - the parent reports the node it did not get
                code = 1
            os._exit(code)
        os.close(write_fd)
        return cls(pid, read_fd, chunk)

    def read(self) -> Iterator[dict]:
        data = os.read(self.fd, 1 << 16)
        if not data:
            self.open = False
            return
        *lines, self.partial = (self.partial + data).split(b"\n")
        for line in lines:
            result = json.loads(line)
            if result.get("node") in self.pending:
                self.pending.remove(result["node"])
            yield result

    def finish(self) -> tuple[str | None, list[tuple[str, Path]]]:
        """Reap the child; when it died early: (the node it was on, the items it never reached)."""
        os.close(self.fd)
        _, status = os.waitpid(self.pid, 0)
        if not self.pending:
            return None, []
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        self.how = f"killed by {signal.Signals(sig).name}" if sig else f"exit status {os.waitstatus_to_exitcode(status)}"
        culprit, *rest = self.pending
        return culprit, [(node, self.by_node[node]) for node in rest]

    def kill(self) -> None:
        os.close(self.fd)
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)


def _limit_memory() -> None:
    try:
        import resource
    except ImportError:  # not on this platform: the chunk size still bounds what a child holds
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = WORKER_MEMORY if hard == resource.RLIM_INFINITY else min(WORKER_MEMORY, hard)
    if soft == resource.RLIM_INFINITY or soft > limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def safely(work: Work, node: str, bundle: Path) -> dict:
    try:
        return work(node, bundle)
    except MemoryError:
        return {"node": node, "error": f"cannot diagnose: over the worker's memory limit ({WORKER_MEMORY >> 20} MiB)"}
    except Exception as err:  # noqa: BLE001 - one bad bundle must not take the others down
        return {"node": node, "error": f"cannot diagnose: {type(err).__name__}: {err}"}
