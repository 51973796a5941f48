"""A system error of a job on one host names shared memory, not the network; with no host shown the
socket causes stay first."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import ranked as _ranked
from tests.evidence.helpers import step as _step

# -- a system error of a job on one host: the causes between hosts drop out -------------------------
# nccl-tests common.cu prints the ranks (`Rank N Pid P on HOST device D`) before NCCL's init.
ONE_HOST = ("# nThread 1 nGpus 4 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
            "#\n# Using devices\n"
            + "".join(f"#   Rank  {r} Pid   1688 on    box-1 device  {r} [0x18] GeForce RTX 2080 Ti\n" for r in range(4))
            + "box-1: Test NCCL failure common.cu:777 'unhandled system error'\n")
SYSTEM_ERROR = "RuntimeError: NCCL Error 2: unhandled system error\n"


def test_a_system_error_on_one_host_names_shared_memory_not_the_network(tmp_path):
    rc, d, _ = _diagnose(tmp_path, ONE_HOST)
    assert _step(d, "nccl_log.blocked")["value"]["log.job.scope"] == "intra"
    assert rc == 3 and _ranked(d) == ["container_shm_too_small"]
    assert d["findings"][0]["next_step"].startswith("paste `df -h /dev/shm` where the job runs")


def test_the_same_error_with_no_host_shown_keeps_the_socket_causes_first(tmp_path):
    _, d, _ = _diagnose(tmp_path, SYSTEM_ERROR)
    assert _ranked(d) == ["wrong_socket_ifname", "container_network_isolation", "container_shm_too_small"]
