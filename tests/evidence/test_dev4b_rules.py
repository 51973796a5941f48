"""Rules from issue 12's refusals and empty answers (dev4b): lines NCCL and PyTorch print that were
refused or named nothing, read from their sources (signatures/signatures.yaml cites each). Through
the CLI (diagnose --evidence FILE --format json), as an engineer pastes them."""

from __future__ import annotations

import json

from tests.evidence.helpers import cli, facts

P = "gpu-a:4242:4301 [0] "
# NCCL 2.29-2.30 src/transport/net_ib/p2p.cc: WARN "NET/IB: Got completion from peer %s with
# status=%s(%d) opcode=%s(%d) vendor_err=%u %s%s%s%s hca %s" (ibvWcStatusStr names the status).
RETRY_230 = (f"{P}transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<45123> with "
             "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  localGid ::ffff:10.0.0.1 "
             "remoteGids::ffff:10.0.0.2 hca mlx5_0\n")
# PyTorch ProcessGroupNCCL's watchdog (WorkNCCL::checkTimeout), as torchrun's per-rank prefix prints it.
WATCHDOG = ("[rank1]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [PG 0 Rank 1] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran "
            "for 600081 milliseconds before timing out.\n")


def _diagnose(tmp_path, text: str) -> tuple[int, dict]:
    path = tmp_path / "paste.txt"
    path.write_text(text)
    proc = cli("diagnose", "--evidence", str(path), "--format", "json")
    return proc.returncode, json.loads(proc.stdout)


def test_a_completion_named_by_status_is_the_retry_exceeded_kind_with_its_vendor_syndrome(tmp_path):
    errors = facts(tmp_path, RETRY_230)["log.nccl"]["errors"]
    assert list(errors) == ["retry_exceeded"]
    assert errors["retry_exceeded"]["details"] == [{"peer": "10.0.0.2", "local_gid": "::ffff:10.0.0.1",
                                                    "remote_gid": "::ffff:10.0.0.2", "vendor_err": 129}]


def test_a_lone_watchdog_timeout_is_a_hang_whose_candidates_are_a_collective_that_never_completes(tmp_path):
    rc, d = _diagnose(tmp_path, WATCHDOG)
    assert rc == 3 and d["verdict"] == "inconclusive"
    # dev5: ranked by how many setups each cause reaches, all low (a timeout says where, not why)
    assert [(f["cause"], f["confidence"]) for f in d["findings"]] == [
        ("fabric_unreachable", "low"), ("iommu_enabled", "low"), ("pcie_acs_enabled", "low")]
    assert d["findings"][0]["supporting"] == [f"{tmp_path / 'paste.txt'}:1: {WATCHDOG.strip()}"]


def test_beside_an_rdma_failure_the_watchdog_favours_what_both_explain_not_acs(tmp_path):
    # A frame or a timeout says where a rank waits, not why: the retry-exceeded completion's causes
    # rank, the one that also hangs (fabric_unreachable) first.
    rc, d = _diagnose(tmp_path, WATCHDOG + RETRY_230)
    assert [f["cause"] for f in d["findings"]] == ["fabric_unreachable", "wrong_gid_index", "mtu_mismatch"]
    assert len(d["findings"][0]["supporting"]) == 3


def test_pytorchs_words_for_ncclresults_are_read_not_refused(tmp_path):
    # torch/csrc/distributed/c10d/NCCLUtils.cpp getNcclErrorDetailStr, each on a line of its own.
    for line, kind in (("ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
                        "prematurely.", "remote_error"),
                       ("ncclUnhandledCudaError: Call to CUDA function failed.", "cuda_failure"),
                       ("ncclInvalidUsage: This usually reflects invalid usage of NCCL library.", "invalid_usage")):
        assert list(facts(tmp_path, line + "\n")["log.nccl"]["errors"]) == [kind], line


def test_invalid_usage_names_no_cause_and_says_so(tmp_path):
    text = f"{P}init.cc:943 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000\n"
    rc, d = _diagnose(tmp_path, text)
    assert rc == 3 and d["root_cause"] is None and d["findings"] == []
    reasons = [i["reason"] for i in d["inconclusive"] if i["node"] == "evidence"]
    assert reasons[0] == (f"{tmp_path / 'paste.txt'}:1: NCCL returned ncclInvalidUsage or ncclInvalidArgument: the "
                          "program or its launcher called NCCL wrongly (two ranks on one GPU, a rank or count out of "
                          "range); the WARN before it names the call; no cause of the catalogue covers it")


def test_a_reset_connection_is_a_peer_that_left(tmp_path):
    text = f"{P}misc/socket.cc:538 NCCL WARN Net : Call to recv from 10.0.0.2<45678> failed : Connection reset by peer\n"
    assert list(facts(tmp_path, text)["log.nccl"]["errors"]) == ["remote_error"]


def test_refused_connects_that_ran_out_of_retries_are_refused_connects(tmp_path):
    # misc/socket.cc 2.18-2.21 retries ECONNREFUSED only, then prints this without the errno text.
    text = f"{P}misc/socket.cc:466 NCCL WARN socketStartConnect: exceeded retries (20000)\n"
    assert list(facts(tmp_path, text)["log.nccl"]["errors"]) == ["connect_refused"]


def test_a_gid_change_in_every_versions_words_points_at_gid_drift(tmp_path):
    # 2.4-2.22 `Got async event : GID table change`; 2.23.4-2.27.7 have no case for
    # IBV_EVENT_GID_CHANGE (18) and print `unknown event type (18)`; 2.28.3+ `GID table changed`.
    for message in ("Got async event : GID table change", "unknown event type (18)", "GID table changed"):
        rc, d = _diagnose(tmp_path, f"{P}transport/net_ib.cc:204 NCCL WARN NET/IB : mlx5_3:1 {message}\n")
        assert [(f["cause"], f["confidence"]) for f in d["findings"]] == [("gid_index_drift", "medium")], message
    other = facts(tmp_path, f"{P}transport/net_ib.cc:204 NCCL WARN NET/IB : mlx5_3:1 unknown event type (20)\n")
    assert list(other["log.nccl"]["errors"]) == ["ib_async_event"]  # IBV_EVENT_DEVICE_SPEED_CHANGE, not a GID change


def _topo(paths: dict[str, str]) -> str:
    """`nvidia-smi topo -m` of four GPUs and two NICs; `paths` gives each GPU's path to NIC0 (NIC1 is
    SYS from all), in the shape nvidia-smi prints it, with its NIC legend."""
    rows = []
    names = ["GPU0", "GPU1", "GPU2", "GPU3"]
    for i, gpu in enumerate(names):
        cells = ["X" if j == i else ("NV4" if j // 2 == i // 2 else "SYS") for j in range(4)]
        rows.append(f"{gpu}\t" + "\t".join(cells) + f"\t{paths[gpu]}\tSYS\t0-23\t0\t\tN/A")
    return ("\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n" + "\n".join(rows) +
            "\nNIC0\t" + "\t".join(paths[g] for g in names) + "\t X \tSYS\t\t\t\t\n"
            "NIC1\tSYS\tSYS\tSYS\tSYS\tSYS\t X \t\t\t\t\n\nLegend:\n\n  X    = Self\n\nNIC Legend:\n\n"
            "  NIC0: mlx5_0\n  NIC1: mlx5_1\n")


FAR = _topo({"GPU0": "NODE", "GPU1": "NODE", "GPU2": "PIX", "GPU3": "PIX"})


def test_gpus_beyond_pxb_of_every_nic_are_a_gdr_candidate_when_the_job_is_slow(tmp_path):
    path = tmp_path / "paste.txt"
    path.write_text(FAR)
    d = json.loads(cli("diagnose", "--evidence", str(path), "--format", "json", "--symptom", "slow").stdout)
    assert [(f["cause"], f["confidence"]) for f in d["findings"]] == [("gdr_disabled", "medium")]
    assert d["findings"][0]["supporting"] == [
        f"{path}:1-16: GPU0 (NODE to mlx5_0), GPU1 (NODE to mlx5_0): nearest NIC beyond PXB, NCCL's default "
        "NCCL_NET_GDR_LEVEL, so no GPUDirect RDMA for them"]
    assert d["findings"][0]["contradicting"] == []


def test_the_topology_raises_no_gdr_question_when_it_is_within_reach_or_beside_a_crash(tmp_path):
    near = _topo({"GPU0": "PXB", "GPU1": "PXB", "GPU2": "PIX", "GPU3": "PIX"})
    for text, symptom in ((near, "slow"), (FAR, "crash")):
        path = tmp_path / "paste.txt"
        path.write_text(text)
        d = json.loads(cli("diagnose", "--evidence", str(path), "--format", "json", "--symptom", symptom).stdout)
        assert d["findings"] == [], symptom


def test_a_set_gdr_level_or_net_lines_decide_instead_of_the_topology(tmp_path):
    level = "\nexport NCCL_NET_GDR_LEVEL=SYS\n"  # the job's own reach: the default distance no longer says
    lines = f"{P}NCCL INFO Channel 00/0 : 0[0] -> 4[0] [send] via NET/IB/0/GDRDMA\n"
    for extra in (level, lines):
        gdr = facts(tmp_path, FAR + extra)["log.job"]["gdr"]
        assert gdr["out_of_reach"] == [], extra
    assert [g["gpu"] for g in facts(tmp_path, FAR)["log.job"]["gdr"]["out_of_reach"]] == ["GPU0", "GPU1"]


def test_a_topology_where_every_gpu_nic_path_is_phb_is_a_vms_and_raises_no_gdr_question(tmp_path):
    flat = _topo({"GPU0": "PHB", "GPU1": "PHB", "GPU2": "PHB", "GPU3": "PHB"}).replace("\tSYS\t0-23", "\tPHB\t0-23")
    assert facts(tmp_path, flat)["log.job"]["gdr"]["out_of_reach"] == []


VERSION_ONLY = f"{P}NCCL INFO NCCL version 2.21.5+cuda12.4\n"


def _slow(tmp_path, text: str, *symptom: str) -> dict:
    path = tmp_path / "paste.txt"
    path.write_text(text)
    return json.loads(cli("diagnose", "--evidence", str(path), "--format", "json", *symptom).stdout)


def test_a_slow_job_whose_log_never_names_its_network_asks_sockets_first_then_gdr(tmp_path):
    d = _slow(tmp_path, VERSION_ONLY, "--symptom", "slow")
    assert [(f["cause"], f["confidence"], f["contradicting"]) for f in d["findings"]] == [
        ("socket_fallback", "low", []), ("gdr_disabled", "low", [])]  # a tie: the text tells neither (dev11)
    assert d["findings"][0]["supporting"] == [f"{tmp_path / 'paste.txt'}:1: NCCL runs, and no line says which "
                                              "network it chose"]
    assert "`Using network Socket`" in d["findings"][0]["next_step"]


def test_the_network_question_is_not_asked_when_the_log_answers_it_or_nothing_was_slow(tmp_path):
    on_ib = VERSION_ONLY + f"{P}NCCL INFO Using network IB\n"
    assert "socket_fallback" not in [f["cause"] for f in _slow(tmp_path, on_ib, "--symptom", "slow")["findings"]]
    assert _slow(tmp_path, VERSION_ONLY)["findings"] == []
    assert _slow(tmp_path, VERSION_ONLY, "--symptom", "hang")["findings"] == []


def test_a_completion_queue_refused_for_memory_is_the_memlock_limit(tmp_path):
    # mlx5 pins a CQ's buffer through ib_umem_get like a registration (RLIMIT_MEMLOCK); NCCL 2.18.5+
    # prints the errno (misc/ibvwrap.cc IBV_PTR_CHECK_ERRNO).
    text = (f"{P}NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\n"
            f"{P}misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory\n")
    rc, d = _diagnose(tmp_path, text + text.replace("gpu-a", "gpu-b"))  # two hosts: an inter-node job
    assert d["root_cause"]["id"] == "container_missing_ib_devices"
    assert next(p for p in d["path"] if p["node"] == "nccl_log.memlock")["outcome"] == "yes"


def test_a_reset_connection_outside_nccls_socket_message_is_no_signal(tmp_path):
    import pytest

    from allreduce_doctor.evidence import EvidenceError

    text = ("requests.exceptions.ConnectionError: ('Connection aborted.', ConnectionResetError(104, "
            "'Connection reset by peer'))\nBrokenPipeError: [Errno 32] Broken pipe\n")
    with pytest.raises(EvidenceError):
        facts(tmp_path, text)
