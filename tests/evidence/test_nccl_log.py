"""The NCCL_DEBUG log recognizer: prefixes, NCCL versions' wording, the facts of log.nccl."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence.nccl import split
from tests.evidence.helpers import facts

MSG = "Bootstrap : Using eth0:10.0.0.1<0>"


@pytest.mark.parametrize("line,host,dev", [
    (f"node1:1234:1250 [3] NCCL INFO {MSG}", "node1", 3),
    (f"[1,6]<stdout>:worker-0:27:575 [6] NCCL INFO {MSG}", "worker-0", 6),
    (f"0: gpu-a-12:4242:4242 [0] NCCL INFO {MSG}", "gpu-a-12", 0),
    (f"[155] crow-ib-19:5330:5330 [3] NCCL INFO {MSG}", "crow-ib-19", 3),
    (f"2024-12-04T07:19:43.480Z ip-10-1-2-3:79:79 [0] NCCL INFO {MSG}", "ip-10-1-2-3", 0),
    (f"2025-05-16T16:39:51.208-07:00ip-10-36-29-253:79:79 [0] NCCL INFO {MSG}", "ip-10-36-29-253", 0),
    (f"Aug 17 06:18:01 node1 python[123]: node1:79:79 [0] NCCL INFO {MSG}", "node1", 0),
    (f"NCCL INFO {MSG}", None, None),
    (f"_node1:1:2 [0] NCCL INFO {MSG}_", "_node1", 0),
])
def test_prefixes(line, host, dev):
    assert split(line) == (host, dev, "INFO", "", MSG)


def test_source_file_before_the_marker_is_kept_apart():
    assert split("transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'") == \
        (None, None, "WARN", "transport/nvls.cc", "Cuda failure 'invalid argument'")
    assert split("h:1:2 [4] ib_plugin.c:1615 NCCL WARN NET/IB : Got completion") == \
        ("h", 4, "WARN", "ib_plugin.c", "NET/IB : Got completion")


def test_not_an_nccl_line():
    assert split("the NCCL library is slow") is None


def test_transports_across_versions(tmp_path):
    log = "\n".join([
        "a:1:2 [0] NCCL INFO Ring 00 : 0 -> 1 via NET/IB/0",  # 2.3
        "a:1:2 [0] NCCL INFO Ring 00 : 35 -> 34 [send] via NET/Socket/0",
        "a:1:2 [0] NCCL INFO Channel 00 : 6[a2000] -> 5[2c000] via P2P/IPC/read",  # 2.4-2.11
        "a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA",  # 2.12+
        "a:1:2 [0] NCCL INFO Channel 01/0 : 13[5] -> 5[5] [receive] via NET/IBext/5/GDRDMA",
        "a:1:2 [0] NCCL INFO Channel 02/1 : 0[0] -> 1[1] via P2P/CUMEM/read",
        "a:1:2 [0] NCCL INFO Ring 00 : 7 -> 8 [receive] via NET/AWS Libfabric/0",
        "a:1:2 [0] NCCL INFO Channel 00 : 1[2a000] -> 0[27000] via SHM/direct/direct",
        "a:1:2 [0] NCCL INFO Channel 00/0 : 1[1] -> 9[1] [send] via NET/IB/1(0)/GDRDMA",
    ])
    nccl = facts(tmp_path, log)["log.nccl"]
    assert nccl["transports"] == ["NET/AWS Libfabric/0", "NET/IB/0", "NET/IB/0/GDRDMA", "NET/IB/1(0)/GDRDMA",
                                  "NET/IBext/5/GDRDMA", "NET/Socket/0", "P2P/CUMEM/read", "P2P/IPC/read",
                                  "SHM/direct/direct"]
    assert nccl["lines"] == 9 and nccl["hosts"] == 1


def test_old_nccl_prints_socket_before_ib_on_every_host(tmp_path):
    log = "\n".join([
        "server3:15223:15223 [7] NCCL INFO NET/Socket : Using [0]enp41s0f1:<0> [1]virbr0:<0>",
        "server3:15223:15223 [7] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).",
        "server3:15223:15223 [7] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB enp41s0f1:<0>",
        "server1:117953:117953 [7] NCCL INFO NET/Socket : Using [0]enp41s0f1:<0>",
    ])
    nccl = facts(tmp_path, log)["log.nccl"]
    assert nccl["network"] == "IB"
    assert nccl["host_networks"] == {"server1": "Socket", "server3": "IB"}
    assert nccl["hcas"] == {"server3": ["mlx5_0:1"]}
    assert nccl["hca_layers"] == {"mlx5_0:1": "IB"}
    assert nccl["oob"] == {"server3": ["enp41s0f1:"]}
    assert nccl["socket_ifaces"] == {"server1": ["enp41s0f1:"], "server3": ["enp41s0f1:", "virbr0:"]}
    assert nccl["plugin"] == "none"


def test_socket_after_a_failure_is_the_network(tmp_path):
    log = "NCCL INFO Failed to open libibverbs.so[.1]\nNCCL INFO NET/Socket : Using [0]ib0:10.1.1.1<0>\n"
    nccl = facts(tmp_path, log)["log.nccl"]
    assert nccl["network"] == "Socket"
    assert nccl["errors"]["libibverbs_missing"] == {
        "count": 1, "causes": ["container_missing_libibverbs", "socket_fallback"], "blocking": False,
        "first": "Failed to open libibverbs.so[.1]", "source": f"{tmp_path}/paste.txt:1", "hosts": [], "details": []}


def test_hosts_that_disagree_are_mixed(tmp_path):
    log = "\n".join([
        "a:1:2 [0] NCCL INFO Using network IB",
        "b:1:2 [0] NCCL INFO Using network Socket",
        "c:1:2 [0] NCCL INFO Using network IBext_v8",
    ])
    nccl = facts(tmp_path, log)["log.nccl"]
    assert nccl["network"] == "mixed"
    assert nccl["host_networks"] == {"a": "IB", "b": "Socket", "c": "IBext"}


def test_init_facts(tmp_path):
    log = "\n".join([
        "NCCL version 2.18.5+cuda12.2",
        "h:1:2 [0] NCCL INFO Bootstrap : Using bond0:10.0.0.5<0>",
        "h:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB bond0:10.0.0.5<0>",
        "h:1:2 [0] NCCL INFO NCCL_IB_GID_INDEX set by environment to 3.",
        "h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'",
        "h:1:3 [0] NCCL INFO comm 0x55 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0",
        "h:1:3 [0] NCCL INFO Channel 00/24 :    0   1   2   3",
        "h:1:3 [0] NCCL INFO 24 coll channels, 0 collnet channels, 16 nvls channels, 32 p2p channels, 32 p2p channels per peer",
        "h:1:3 [0] NCCL INFO Pattern 4, crossNic 0, nChannels 12, bw 40.000000/40.000000, type NVL/PIX, sameChannels 1",
        "h:1:3 [0] NCCL INFO  + NET[25.0] - NET/0 (5c8d3d0003a1b2c0/1/25.000000)",
    ])
    f = facts(tmp_path, log)
    nccl = f["log.nccl"]
    assert nccl["version"] == "2.18.5+cuda12.2"
    assert nccl["bootstrap"] == {"h": ["bond0:10.0.0.5"]}
    assert nccl["hca_layers"] == {"mlx5_0:1": "RoCE", "mlx5_1:1": "RoCE"}
    assert (nccl["nranks"], nccl["nnodes"], nccl["local_ranks"]) == (16, 2, 8)
    assert nccl["coll_channels"] == [24]
    assert nccl["ring_channels"] == 24
    assert nccl["graphs"] == [{"cross_nic": 0, "channels": 12, "bw": 40.0, "intra": "NVL", "inter": "PIX"}]
    assert nccl["net_bw_gbs"] == {"0": 25.0}
    assert nccl["gdr_messages"] == {"enabled": 1}
    assert f["log.env"]["vars"] == {"NCCL_IB_GID_INDEX": "3"}
    job = f["log.job"]
    assert (job["scope"], job["fabric"], job["gdr"]["state"]) == ("inter", "roce", "on")
    assert job["nics"] == {"per_node": 2, "basis": "nccl_log", "line_gbps": 200.0, "used": {"h": ["mlx5_0:1", "mlx5_1:1"]}}


@pytest.mark.parametrize("line,kind", [
    ("h:1:2 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]", "libibverbs_missing"),
    ("libibverbs: Warning: couldn't load driver 'libmlx5-rdmav34.so': libmlx5-rdmav34.so: cannot open shared object file",
     "libibverbs_missing"),
    ("libibverbs: Warning: no userspace device-specific driver found for /sys/class/infiniband_verbs/uverbs0",
     "libibverbs_missing"),
    ("h:1:2 [0] NCCL INFO NET/IB : No device found.", "no_ib_device"),
    ("h:1:2 [0] misc/ibvwrap.cc:106 NCCL WARN Call to ibv_open_device failed", "ib_open_failed"),
    ("h:1:2 [0] NCCL WARN NET/IB : dlvsym failed on mlx5dv_reg_dmabuf_mr", "rdma_core_symbols"),
    ("_ibvwrap.cc: NCCL WARN Call to ibv_modify_qp failed with error Connection timed out_", "qp_timeout"),
    ("h:1:2 [0] NCCL WARN Call to ibv_modify_qp failed with 22 Invalid argument, local GID index 3", "qp_invalid"),
    ("h:1:2 [0] transport/net_ib.cc:840 NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129",
     "retry_exceeded"),
    ("h:1:2 [6] transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion from peer 1.2.3.4<1> with status=12 opcode=0",
     "retry_exceeded"),
    ("h:1:2 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer fe80::1%ib0<53249> with error 4,",
     "completion_prot_error"),
    ("transport/nvls.cc:165 NCCL WARN Cuda failure 'invalid argument'", "nvls_failure"),
    ("h:1:2 [0] NCCL WARN Cuda failure 802 'system not yet initialized'", "fabric_manager"),
    ("h:1:2 [0] misc/socket.cc:441 NCCL WARN socketFinalizeAccept: wrong type 4 != 3", "wrong_type"),
    ("h:1:2 [0] NCCL WARN Bootstrap : no socket interface found", "no_socket_iface"),
    ("h:1:2 [2] include/socket.h:390 NCCL WARN Connect to 172.17.0.3<37551> failed : Connection refused", "connect_refused"),
    ("h:1:2 [2] NCCL INFO Call to connect returned Connection refused, retrying", "connect_retry"),
    ("h:1:2 [0] NCCL WARN NET/IB : Got async event : GID table change", "gid_change"),
    ("h:1:2 [0] NCCL WARN Error: network AWS Libfabric not found.", "net_not_found"),
])
def test_warnings_are_classified(tmp_path, line, kind):
    errors = facts(tmp_path, line + "\n")["log.nccl"]["errors"]
    assert list(errors) == [kind]


def test_completion_error_details(tmp_path):
    line = ("mycl-g2:353236:353423 [6] transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion from peer "
            "192.168.3.5<53908> with status=12 opcode=129 len=1048576 vendor err 129 (Recv) localGid ::ffff:192.168.6.3 "
            "remoteGids::ffff:192.168.6.5 hca mlx5_10\n")
    entry = facts(tmp_path, line)["log.nccl"]["errors"]["retry_exceeded"]
    assert entry["details"] == [{"peer": "192.168.3.5", "local_gid": "::ffff:192.168.6.3",
                                 "remote_gid": "::ffff:192.168.6.5", "vendor_err": 129}]
    assert entry["hosts"] == ["mycl-g2"] and entry["count"] == 1


def test_an_unclassified_warning_is_kept_as_an_example(tmp_path):
    nccl = facts(tmp_path, "h:1:2 [0] NCCL WARN something odd happened\n")["log.nccl"]
    assert nccl["errors"] == {}
    assert nccl["other_warnings"]["count"] == 1
    assert nccl["other_warnings"]["examples"][0]["text"] == "something odd happened"


@pytest.mark.parametrize("line,version", [
    ("(RayWorkerWrapper pid=593, ip=10.5.6.103) INFO 07-20 17:27:20 pynccl.py:63] vLLM is using nccl==2.21.5", "2.21.5"),
    ("[2025-09-01 05:58:19 TP0] sglang is using nccl==2.27.3", "2.27.3"),
])
def test_vllm_or_sglang_naming_the_nccl_it_loaded_is_a_version_line(tmp_path, line, version):
    # vLLM's and SGLang's pynccl.py log ncclGetVersion() of the library they loaded.
    assert facts(tmp_path, line + "\n")["log.nccl"]["version"] == version
