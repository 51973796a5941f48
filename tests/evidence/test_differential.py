"""The ranked differential of an evidence-only run, through the CLI (diagnose --evidence FILE
--format json): root_cause is the first candidate, findings the ordered candidates, each with
confidence, supporting and contradicting lines and the next step; a paste is never healthy."""

from __future__ import annotations

import json

from allreduce_doctor.evidence.differential import COLLECT
from tests.evidence.helpers import cli, facts

P = "gpu-node-1:4242:4301 [0] "
RETRY = (f"{P}NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
         f"{P}transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<45123> with status=12 "
         "opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2\n")


def _diagnose(tmp_path, text: str, *extra: str):
    path = tmp_path / "paste.txt"
    path.write_text(text)
    proc = cli("diagnose", "--evidence", str(path), "--format", "json", *extra)
    return proc.returncode, json.loads(proc.stdout)


def test_a_retry_exceeded_paste_ranks_the_candidates(tmp_path):
    rc, d = _diagnose(tmp_path, RETRY)
    assert rc == 3 and d["verdict"] == "inconclusive" and d["healthy"] is None
    ranked = [f["cause"] for f in d["findings"]]
    assert ranked == ["wrong_gid_index", "mtu_mismatch", "fabric_unreachable"]
    assert d["root_cause"]["id"] == "wrong_gid_index" and d["root_cause"]["confidence"] == "medium"
    first = d["findings"][0]
    assert first["supporting"][0] == (f"{tmp_path}/paste.txt:2: transport/net_ib.cc NET/IB : Got completion from "
                                      "peer 10.0.0.2<45123> with status=12 opcode=0 len=0 vendor err 129 (Recv) "
                                      "localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2")
    assert first["next_step"] == "paste `show_gids` of both hosts and the job's NCCL_IB_GID_INDEX"
    assert [f["confidence"] for f in d["findings"]] == ["medium", "low", "low"]
    assert all(isinstance(f["contradicting"], list) for f in d["findings"])


def test_a_paste_with_no_candidate_is_never_healthy(tmp_path):
    rc, d = _diagnose(tmp_path, f"{P}NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n")
    assert rc == 3 and d["verdict"] == "inconclusive"
    assert d["root_cause"] is None and d["healthy"] is None and d["findings"] == []
    assert {"node": "evidence", "reason": COLLECT} in d["inconclusive"]
    assert COLLECT.startswith("nothing in this text points at a cause; paste the NCCL_DEBUG=INFO")


def test_the_symptom_reorders_the_candidates(tmp_path):
    text = (f"{P}NCCL INFO NET/IB : No device found.\n"
            f"{P}include/socket.h:390 NCCL WARN Connect to 10.0.0.2<45763> failed : Connection refused\n")
    _, plain = _diagnose(tmp_path, text)
    _, slow = _diagnose(tmp_path, text, "--symptom", "slow")
    assert [f["cause"] for f in plain["findings"]] == \
        ["wrong_socket_ifname", "container_network_isolation", "container_missing_ib_devices"]
    assert [f["cause"] for f in slow["findings"]] == \
        ["wrong_socket_ifname", "container_missing_ib_devices", "container_network_isolation"]


def test_a_table_below_what_the_nics_carry_is_the_symptom_slow(tmp_path):
    from tests.integration.test_verdicts import IBSTAT, TABLE, _reference

    failures = (f"{P}NCCL INFO NET/IB : No device found.\n"
                f"{P}include/socket.h:390 NCCL WARN Connect to 10.0.0.2<45763> failed : Connection refused\n")

    def order(text: str, *symptom: str) -> list[str]:
        return [f["cause"] for f in _diagnose(tmp_path, text, *symptom)[1]["findings"]][:3]

    measured = failures + _reference(TABLE) + _reference(IBSTAT)  # 338.82 GB/s of the 8 x 400G the paste shows
    assert _diagnose(tmp_path, measured)[1]["bandwidth"]["verdict"] == "below"
    assert order(measured) == order(measured, "--symptom", "slow") == \
        ["container_missing_ib_devices", "wrong_socket_ifname", "wrong_ib_hca"]
    assert order(measured, "--symptom", "error")[2] == "container_network_isolation"  # told otherwise: as told
    unmeasured = failures + _reference(TABLE)  # the NICs not shown: the table alone says no shortfall
    assert order(unmeasured) == order(unmeasured, "--symptom", "error")


def test_a_decided_cause_that_explains_nothing_failed_ranks_after_those_that_do(tmp_path):
    rc, d = _diagnose(tmp_path, RETRY + f"{P}NCCL INFO NCCL_P2P_DISABLE set by environment to 1.\n")
    ranked = {f["cause"]: f for f in d["findings"]}
    assert d["findings"][0]["cause"] == "wrong_gid_index" and rc == 3
    assert list(ranked).index("p2p_disabled_by_env") >= 2 and ranked["p2p_disabled_by_env"]["confidence"] == "high"


def test_text_output_lists_the_candidates(tmp_path):
    path = tmp_path / "paste.txt"
    path.write_text(RETRY)
    out = cli("diagnose", "--evidence", str(path)).stdout.decode()
    assert "Candidates (most likely first):\n  1. wrong_gid_index (medium confidence): " in out
    assert "       next:    paste `show_gids` of both hosts and the job's NCCL_IB_GID_INDEX\n" in out


# An intra-node all_reduce_perf that listed its GPUs and never printed a result (no error).
HUNG_INTRA = ("# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 "
              "agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n"
              "#  Rank  0 Group  0 Pid  21284 on      node1 device  0 [0x2f] NVIDIA A100-PCIE-40GB\n"
              "#  Rank  1 Group  0 Pid  21284 on      node1 device  1 [0x03] NVIDIA A100-PCIE-40GB\n#\n")


def test_a_hung_intra_node_test_names_the_iommu_before_acs_until_the_command_line_is_shown(tmp_path):
    # CUDA does not support IOMMU-enabled bare-metal PCIe P2P on any topology; ACS only redirects
    # behind a PCIe switch (runbooks/nccl_log.yaml hang_iommu).
    _, open_ = _diagnose(tmp_path, HUNG_INTRA)
    assert [f["cause"] for f in open_["findings"]][:2] == ["iommu_enabled", "pcie_acs_enabled"]
    _, passthrough = _diagnose(tmp_path, HUNG_INTRA + "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro iommu=pt quiet\n")
    assert passthrough["root_cause"]["id"] == "pcie_acs_enabled"
    _, translating = _diagnose(tmp_path, HUNG_INTRA + "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro intel_iommu=on quiet\n")
    assert translating["root_cause"]["id"] == "iommu_enabled"


def test_rccl_warning_that_the_command_line_lacks_iommu_pt_names_the_iommu(tmp_path):
    # ROCm/rccl src/init.cc warns when /proc/cmdline has no iommu=pt; ROCm install FAQ Issue #5.
    warn = ('node1:402:402 [0] /src/out/build/rccl/hipify/src/init.cc:179 NCCL WARN Missing "iommu=pt" from kernel '
            "command line which can lead to system instablity or hang!\n")
    _, d = _diagnose(tmp_path, warn)
    assert d["root_cause"]["id"] == "iommu_enabled" and d["findings"][0]["confidence"] == "medium"
    assert d["findings"][0]["next_step"] == ("paste `cat /proc/cmdline` and whether the job hangs with the GPUs at "
                                             "100% (ROCm install FAQ Issue #5)")
    assert list(facts(tmp_path, warn)["log.nccl"]["errors"]) == ["iommu_not_passthrough"]  # a setting, not a DMA fault


def test_a_dmabuf_registration_out_of_memory_names_the_buffers_not_the_memlock_limit(tmp_path):
    # ENOMEM from ibv_reg_dmabuf_mr: NCCL registers every channel's buffers (NCCL_BUFFSIZE); the kernel
    # counts no DMA-BUF page against RLIMIT_MEMLOCK (umem_dmabuf.c ib_umem_dmabuf_get), so the memlock
    # limit is no candidate (ibv_reg_mr's ENOMEM is: tests/evidence/test_memlock_registration.py).
    _, d = _diagnose(tmp_path, f"{P}misc/ibvwrap.cc:183 NCCL WARN Call to ibv_reg_dmabuf_mr failed with error "
                               "Cannot allocate memory\n")
    assert [f["cause"] for f in d["findings"]] == ["nccl_tuning_override"]
    assert d["findings"][0]["next_step"].startswith("paste the job's NCCL_BUFFSIZE")
