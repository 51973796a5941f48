"""Completion errors named by status (NCCL 2.29+ p2p.cc) are the retry-exceeded kind with the
vendor syndrome; a completion queue refused for memory is the memlock limit."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_rc_json as _diagnose
from tests.evidence.helpers import facts

P = "gpu-a:4242:4301 [0] "
# NCCL 2.29-2.30 src/transport/net_ib/p2p.cc: WARN "NET/IB: Got completion from peer %s with
# status=%s(%d) opcode=%s(%d) vendor_err=%u %s%s%s%s hca %s" (ibvWcStatusStr names the status).
RETRY_230 = (f"{P}transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<45123> with "
             "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  localGid ::ffff:10.0.0.1 "
             "remoteGids::ffff:10.0.0.2 hca mlx5_0\n")


def test_a_completion_named_by_status_is_the_retry_exceeded_kind_with_its_vendor_syndrome(tmp_path):
    errors = facts(tmp_path, RETRY_230)["log.nccl"]["errors"]
    assert list(errors) == ["retry_exceeded"]
    assert errors["retry_exceeded"]["details"] == [{"peer": "10.0.0.2", "local_gid": "::ffff:10.0.0.1",
                                                    "remote_gid": "::ffff:10.0.0.2", "vendor_err": 129}]


def test_a_completion_queue_refused_for_memory_is_the_memlock_limit(tmp_path):
    # mlx5 pins a CQ's buffer through ib_umem_get like a registration (RLIMIT_MEMLOCK); NCCL 2.18.5+
    # prints the errno (misc/ibvwrap.cc IBV_PTR_CHECK_ERRNO).
    text = (f"{P}NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n"
            f"{P}misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory\n")
    rc, d = _diagnose(tmp_path, text + text.replace("gpu-a", "gpu-b"))  # two hosts: an inter-node job
    assert d["root_cause"]["id"] == "container_missing_ib_devices"
    assert next(p for p in d["path"] if p["node"] == "nccl_log.memlock")["outcome"] == "yes"
