"""ENOMEM from ibv_reg_mr is the memlock limit (the kernel's ib_umem_get refuses pinning past
RLIMIT_MEMLOCK without CAP_IPC_LOCK): it decides the memlock step, on one host too."""

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


# -- ENOMEM from ibv_reg_mr: the memlock limit -------------------------------------------------------
# NCCL 2.18.5 misc/ibvwrap.cc wrap_ibv_reg_mr_iova2; the kernel's ib_umem_get refuses pinning past
# RLIMIT_MEMLOCK without CAP_IPC_LOCK with -ENOMEM (drivers/infiniband/core/umem.c).
MEMLOCK = "misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory\n"


def test_a_registration_past_the_memlock_limit_decides_the_memlock_step(tmp_path):
    rc, d, _ = _diagnose(tmp_path, MEMLOCK)
    assert _step(d, "nccl_log.ib_devices")["outcome"] == "no"
    assert _step(d, "nccl_log.memlock")["outcome"] == "yes"
    assert rc == 1 and d["root_cause"]["id"] == "container_missing_ib_devices"
    assert _ranked(d) == ["container_missing_ib_devices", "nccl_tuning_override"]
    assert d["findings"][0]["next_step"].startswith("paste `ulimit -l` where the ranks run")


def test_the_memlock_step_holds_on_one_host_too(tmp_path):
    # NCCL registers memory only for its network transport: a run on one host that forces IB
    # (NCCL_SHM_DISABLE=1, NCCL_P2P_DISABLE=1) meets the same limit.
    rc, d, _ = _diagnose(tmp_path, ONE_HOST.replace("box-1: Test NCCL failure common.cu:777 'unhandled system error'\n",
                                                    "box-1:1688:1688 [0] " + MEMLOCK))
    assert rc == 1 and d["root_cause"]["id"] == "container_missing_ib_devices"
