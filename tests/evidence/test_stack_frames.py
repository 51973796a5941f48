"""Stack frames of a rank hung in NCCL (gdb/pstack, py-spy --native, faulthandler): NCCL's function
names say where a thread waits (init, a TCP socket, a connection, a collective), the candidates say
why, and a pasted stack is the symptom "hang" when the reporter gave none."""

from __future__ import annotations

import json

from tests.evidence.helpers import cli, facts

LIB = "() from /usr/lib/x86_64-linux-gnu/libnccl.so.2"
# A gdb `thread apply all bt` of a rank that never left ncclCommInitRank (NCCL 2.21 names).
INIT_BT = f"""\
Thread 3 (Thread 0x7f3c6bfff640 (LWP 4188) "python"):
#0  0x00007f3cb1e9a7ff in poll () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007f3c8e3a0c55 in ncclProxyService(void*) {LIB}
Thread 1 (Thread 0x7f3cb2a1b740 (LWP 4101) "python"):
#0  0x00007f3cb1e8b2a1 in recv () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007f3c8e2b7e10 in socketProgress(int, ncclSocket*, void*, int, int*) {LIB}
#3  0x00007f3c8e2a1b4d in bootstrapAllGather(void*, void*, int) {LIB}
#4  0x00007f3c8e2c0a11 in initTransportsRank(ncclComm*, ncclComm*) {LIB}
#6  0x00007f3c8e2c3f20 in ncclCommInitRank {LIB}
"""


def _diagnose(tmp_path, text: str, *extra: str) -> dict:
    path = tmp_path / "paste.txt"
    path.write_text(text)
    proc = cli("diagnose", "--evidence", str(path), "--format", "json", *extra)
    assert proc.returncode == 3, proc.stderr  # inconclusive: a stack says where, not why
    return json.loads(proc.stdout)


def test_a_hung_init_stack_names_its_phases_and_its_threads(tmp_path):
    errors = facts(tmp_path, INIT_BT)["log.nccl"]["errors"]
    assert {k: v["count"] for k, v in errors.items()} == {"nccl_thread": 1, "hang_in_socket": 1, "hang_in_init": 3}
    # gdb's frame mark reads as a comment mark: the frame is read without it.
    assert errors["hang_in_init"]["first"] == f"3  0x00007f3c8e2a1b4d in bootstrapAllGather(void*, void*, int) {LIB}"
    assert errors["nccl_thread"]["blocking"] is False and errors["nccl_thread"]["causes"] == []


def test_a_hung_init_stack_ranks_the_bootstrap_causes(tmp_path):
    d = _diagnose(tmp_path, INIT_BT)
    assert [f["cause"] for f in d["findings"]] == ["socket_blocked", "wrong_socket_ifname", "container_network_isolation"]
    assert d["root_cause"]["id"] == "socket_blocked" and d["verdict"] == "inconclusive"
    assert d["findings"][0]["supporting"][0] == (f"{tmp_path}/paste.txt:6: 1  0x00007f3c8e2b7e10 in socketProgress"
                                                 f"(int, ncclSocket*, void*, int, int*) {LIB}")


def test_a_stack_is_the_hang_symptom_when_none_is_given(tmp_path):
    # A retry-exceeded completion and a rank waiting in the IB connection setup: with no symptom
    # given, the stack makes it a hang (fabric_unreachable, a hang cause, moves up), exactly as
    # `--symptom hang` does; the reporter's own symptom wins over the stack.
    text = ("n1:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
            "n1:1:2 [0] transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<45123> with "
            "status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2\n"
            f"#3  0x00007f3c8e31c2f0 in ncclIbConnect(int, void*, void**, ncclNetDeviceHandle_v7_t**) {LIB}\n")
    ranked = {s: [f["cause"] for f in _diagnose(tmp_path, text, *(("--symptom", s) if s else ()))["findings"]]
              for s in ("", "hang", "error")}
    assert ranked[""] == ranked["hang"] == ["wrong_gid_index", "fabric_unreachable", "mtu_mismatch"]
    assert ranked["error"] == ["wrong_gid_index", "mtu_mismatch", "cross_rail_unreachable"]


def test_a_rank_hung_in_connection_setup_points_at_the_rdma_address(tmp_path):
    text = (f"#3  0x00007f3c8e31c2f0 in ncclIbConnect(int, void*, void**, ncclNetDeviceHandle_v7_t**) {LIB}\n"
            f"#6  0x00007f3c8e2d9a31 in ncclTransportP2pSetup(ncclComm*, ncclTopoGraph*, int, int*) {LIB}\n")
    d = _diagnose(tmp_path, text)
    assert [f["cause"] for f in d["findings"]] == ["wrong_gid_index", "cross_rail_unreachable", "fabric_unreachable"]


def test_a_rank_hung_in_a_collective_points_at_peer_traffic(tmp_path):
    d = _diagnose(tmp_path, "Thread 0x7F3CB2A1B740 (active): \"MainThread\"\n    ncclAllReduce (libnccl.so.2)\n"
                            "    all_reduce (torch/distributed/distributed_c10d.py:2050)\n")
    # dev5: the order of candidates.yaml collective_never_completes (by how many setups each cause reaches), all low
    assert [(f["cause"], f["confidence"]) for f in d["findings"]] == [
        ("fabric_unreachable", "low"), ("iommu_enabled", "low"), ("pcie_acs_enabled", "low")]


def test_only_background_threads_point_at_nothing(tmp_path):
    d = _diagnose(tmp_path, f"#1  0x00007f3c8e3a0c55 in ncclProxyService(void*) {LIB}\n"
                            "    persistentSocketThread (libnccl.so.2)\n")
    assert d["findings"] == [] and d["root_cause"] is None and d["healthy"] is None


def test_nccl_lines_that_name_a_function_are_not_frames(tmp_path):
    text = ("n1:1:2 [0] NCCL INFO ncclCommInitRank comm 0x5581c0 rank 0 nranks 16 cudaDev 0 busId 1a000 - Init COMPLETE\n"
            "n1:1:2 [0] NCCL INFO ncclCommInitRankConfig comm 0x5581c0 rank 0 nranks 16 cudaDev 0 - Init START\n"
            "we call ncclAllReduce twice per step\n")
    assert facts(tmp_path, text)["log.nccl"]["errors"] == {}
