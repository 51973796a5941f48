"""The fleet's worker pool: every node answered once, whatever its worker does."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from allreduce_doctor.fleet import pool
from allreduce_doctor.fleet.pool import DIED, chunk_size, run_forked

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the pool forks")


def items(n: int) -> list[tuple[str, Path]]:
    return [(f"n{i:02d}", Path(f"/bundles/n{i:02d}.tar.gz")) for i in range(n)]


def echo(node: str, bundle: Path) -> dict:
    return {"node": node, "bundle": str(bundle), "pid": os.getpid()}


def test_every_node_is_answered_once_by_short_lived_workers(monkeypatch):
    monkeypatch.setattr(pool, "CHUNK", 3)
    results = list(run_forked(items(20), echo, jobs=2))
    assert sorted(r["node"] for r in results) == [f"n{i:02d}" for i in range(20)]
    assert all(r["bundle"] == f"/bundles/{r['node']}.tar.gz" for r in results)
    assert len({r["pid"] for r in results}) >= 7  # a child lives for one chunk of at most 3
    assert os.getpid() not in {r["pid"] for r in results}


def test_a_worker_that_dies_costs_only_the_node_it_was_on():
    def work(node: str, bundle: Path) -> dict:
        if node == "n05":
            os.kill(os.getpid(), signal.SIGKILL)
        return echo(node, bundle)

    results = {r["node"]: r for r in run_forked(items(12), work, jobs=2)}
    assert sorted(results) == [f"n{i:02d}" for i in range(12)]
    assert results["n05"] == {"node": "n05", "error": f"{DIED} (killed by SIGKILL)"}
    assert all("error" not in r for node, r in results.items() if node != "n05")


def test_a_worker_that_exits_is_reported_with_its_status():
    def work(node: str, bundle: Path) -> dict:
        if node == "n01":
            os._exit(7)
        return echo(node, bundle)

    results = {r["node"]: r for r in run_forked(items(4), work, jobs=1)}
    assert results["n01"] == {"node": "n01", "error": f"{DIED} (exit status 7)"}
    assert sorted(results) == ["n00", "n01", "n02", "n03"]


def test_a_runaway_bundle_hits_the_worker_memory_limit_not_the_machine(monkeypatch):
    monkeypatch.setattr(pool, "WORKER_MEMORY", 1 << 30)

    def work(node: str, bundle: Path) -> dict:
        if node == "n02":
            bytearray(2 << 30)
        return echo(node, bundle)

    results = {r["node"]: r for r in run_forked(items(4), work, jobs=2)}
    assert results["n02"] == {"node": "n02", "error": "cannot diagnose: over the worker's memory limit (1024 MiB)"}
    assert all("error" not in r for node, r in results.items() if node != "n02")


def test_results_stream_while_other_workers_still_run(tmp_path):
    flag = tmp_path / "first-result-seen"

    def work(node: str, bundle: Path) -> dict:
        if node == "n01":  # waits until the parent has yielded n00's result
            deadline = time.monotonic() + 20
            while not flag.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            return {"node": node, "streamed": flag.exists()}
        return {"node": node, "streamed": True}

    seen = []
    for result in run_forked(items(2), work, jobs=2):
        seen.append(result)
        flag.touch()
    assert sorted(seen, key=lambda r: r["node"]) == [{"node": "n00", "streamed": True}, {"node": "n01", "streamed": True}]


@pytest.mark.parametrize("n, jobs, size", [(16, 2, 8), (4096, 2, 32), (10, 16, 1), (256, 8, 8), (40, 4, 8),
                                           (20, 4, 5), (1000, 16, 16)])
def test_chunks_balance_the_load_and_bound_a_worker(n, jobs, size):
    assert chunk_size(n, jobs) == size
