"""Reading fixes (issue 12, dev8): places where the reader said something untrue about a real NCCL line.
Each line here is in the shape the NCCL (or libfabric) tag named beside it prints, with and without the
`host:pid:tid [dev]` prefix; the rules themselves cite their sources in signatures.yaml and the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from allreduce_doctor.evidence import signatures
from allreduce_doctor.evidence.nccl import NcclLog
from tests.evidence.helpers import ROOT, diagnose_json, facts
from tests.evidence.test_fast_path_property import _read

PREFIXES = ("node-a:4242:4301 [0] ", "")  # NCCL's own prefix, and the message quoted without it


def _errors(d: dict) -> dict:
    return next(e["observed"] for e in d["evidence"] if e["fact"] == "log.nccl.errors") or {}


def _ranked(d: dict) -> list[tuple[str, str]]:
    return [(f["cause"], f["confidence"]) for f in d["findings"]]


# -- 1. `Bootstrap: Using mlx5_0:1`: the net plugin's device (NCCL_OOB_NET_ENABLE, bootstrap.cc v2.24.3-1+) --
@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("body, device", [("mlx5_0:1", "mlx5_0:1"), ("mlx5_0+mlx5_1:1", "mlx5_0+mlx5_1:1"),
                                          ("N/A:-1", "N/A:-1")])
def test_the_oob_net_device_is_a_device_not_a_socket_interface(prefix, body, device):
    log = NcclLog()
    assert log.feed(f"{prefix}NCCL INFO Bootstrap: Using {body}", "paste.txt:1")
    host = "node-a" if prefix else "?"
    assert log.bootstrap_net == {host: [device]} and log.bootstrap == {}
    assert log.where.keys == {"bootstrap_net": "paste.txt:1"}


@pytest.mark.parametrize("line", ["NCCL INFO Bootstrap : Using [0]ens5:172.31.0.137<0>",  # 2.4-2.12
                                  "NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",  # 2.13-2.23
                                  "NCCL INFO Bootstrap: Using eth0:fe80::1%eth0<0>"])  # 2.24+
def test_the_socket_bootstrap_line_is_still_an_interface(line):
    log = NcclLog()
    log.feed("node-a:1:2 [0] " + line, "paste.txt:1")
    assert log.bootstrap_net == {} and [i for i, _ in log.bootstrap["node-a"]] == [line.split("Using ")[1].split(":")[0]
                                                                                  .removeprefix("[0]")]


def test_the_oob_device_is_its_own_field(tmp_path):
    nccl = facts(tmp_path, "node-a:1:2 [0] NCCL INFO Bootstrap: Using mlx5_0:1\n"
                           "node-a:1:2 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>\n")["log.nccl"]
    assert nccl["bootstrap_net"] == {"node-a": ["mlx5_0:1"]} and nccl["bootstrap"] == {"node-a": ["eth0:10.0.0.1"]}


OOB_ONLY = ("node-a:4242:4301 [0] NCCL INFO NCCL version 2.27.7+cuda12.9\n"
            "node-a:4242:4301 [0] NCCL INFO NCCL_OOB_NET_ENABLE set by environment to 1\n"
            "node-a:4242:4301 [0] NCCL INFO Bootstrap: Using mlx5_0:1\n"
            "node-b:5151:5200 [0] NCCL INFO Bootstrap: Using mlx5_0:1\n"
            "node-b:5151:5200 [0] misc/socket.cc:578 NCCL WARN socketStartConnect: connect to 10.0.0.1<45763> returned "
            "Connection refused, exceeded error retry count after 35 attempts\n")


def test_two_hosts_on_the_oob_net_are_no_routed_socket_interfaces(tmp_path):
    # Read as interfaces, the two hosts' device lines made the `blocked` step decide socket_blocked (a filter
    # between routed interfaces) though no line shows a socket interface at all.
    rc, d, _ = diagnose_json(tmp_path, OOB_ONLY)
    assert rc == 3 and d["verdict"] == "inconclusive" and d["root_cause"]["confidence"] == "low"
    assert [c for c, _ in _ranked(d)] == ["wrong_socket_ifname", "container_network_isolation", "socket_blocked"]
    step = next(s for s in d["path"] if s["node"] == "nccl_log.blocked")
    assert step["outcome"] == "no" and step["value"]["log.nccl.bootstrap"] == {}


def test_an_oob_device_is_no_interface_chosen_against_nccl_socket_ifname(tmp_path):
    # NCCL_SOCKET_IFNAME names an interface; the failing host printed only its OOB device: whether it has ens9 is
    # not in the text (checks._unverified_ifname), where the device line had read as an interface it chose.
    text = ("node-a:4242:4301 [0] NCCL INFO NCCL version 2.27.7+cuda12.9\n"
            "node-a:4242:4301 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ens9\n"
            "node-a:4242:4301 [0] NCCL INFO Bootstrap: Using mlx5_0:1\n"
            "node-a:4242:4301 [0] misc/socket.cc:578 NCCL WARN socketStartConnect: connect to 10.0.0.1<45763> returned "
            "Connection refused, exceeded error retry count after 35 attempts\n")
    rc, d, _ = diagnose_json(tmp_path, text)
    assert next(s["outcome"] for s in d["path"] if s["node"] == "nccl_log.socket_iface") == "unknown"
    assert _ranked(d)[0] == ("wrong_socket_ifname", "medium") and d["findings"][0]["contradicting"] == []


# -- 2. no_route: NCCL's, the socket layer's or c10d's wording only --------------------------------------
NOT_NCCL = [
    "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded "
    "with url: /api/models (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f3a2c1d0>: "
    "Failed to establish a new connection: [Errno 113] No route to host'))",
    "urllib3.exceptions.NewConnectionError: <urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a "
    "new connection: [Errno 101] Network is unreachable",
    "OSError: [Errno 113] No route to host",
    "curl: (7) Failed to connect to 10.0.0.2 port 8000 after 3 ms: No route to host",
    "ssh: connect to host node-2 port 22: No route to host",
    "the nodes say No route to host when we ping them",
]


@pytest.mark.parametrize("line", NOT_NCCL)
def test_an_http_clients_no_route_is_no_nccl_peer(line):
    sig = signatures.match(line)
    assert sig is None or sig.kind != "no_route", sig.kind


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("message", [
    "include/socket.h:390 NCCL WARN Connect to 10.0.0.2<45763> failed : No route to host",  # 2.4-2.11
    "misc/socket.cc:450 NCCL WARN Net : Connect to 10.0.0.2<45763> failed : No route to host",  # 2.12
    "misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : No route to host",  # 2.18-2.23
    "misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.2<45763> returned 113(No route to host) errno "
    "115(Operation now in progress)",  # 2.21
    "misc/socket.cc:578 NCCL WARN socketStartConnect: connect to 10.0.0.2<45763> returned No route to host, exceeded "
    "error retry count after 35 attempts",  # 2.27
    "os/linux.cc:301 (socketConnectCheck) NCCL WARN ncclOsSocketStartConnect: connect to 10.0.0.2<45763> failed : "
    "Network is unreachable",  # 2.30
    "misc/socket.cc:30 NCCL WARN socketProgressOpt: Call to recv from 10.0.0.2<45763> failed : No route to host",
])
def test_nccls_no_route_is_read_in_each_versions_shape(prefix, message):
    log = NcclLog()
    assert log.feed(prefix + message, "paste.txt:1")
    assert list(log.errors) == ["no_route"] and log.errors["no_route"]["details"][0]["address"] == "10.0.0.2"


@pytest.mark.parametrize("line", [
    "[W socket.cpp:601] [c10d] The client socket has failed to connect to [node-2]:29500 (errno: 113 - No route to host).",
    "[W socket.cpp:601] [c10d] The client socket has failed to connect to node-2:29500 (errno: 101 - Network is unreachable).",
])
def test_c10ds_socket_wording_is_the_rendezvous_not_no_route(line):
    assert signatures.match(line).kind == "c10d_store_retry"  # dev10: c10d's TCPStore client retries it


def test_a_download_that_found_no_route_is_no_bootstrap_failure(tmp_path):
    text = ("node-a:4242:4301 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n" + NOT_NCCL[0] + "\n")
    rc, d, _ = diagnose_json(tmp_path, text)
    assert rc == 3 and _errors(d) == {} and d["findings"] == []


# -- 3. ras.cc `NCCL version mismatch with remote peer` (2.24+): the job's nodes run different versions ----
@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("message", [
    "ras/ras.cc:391 NCCL WARN NCCL version mismatch with remote peer 10.0.0.2<41231> (local: 22403, remote 22304)",
    "ras/ras.cc:415 (rasMsgHandleConnInit) NCCL WARN NCCL version mismatch with remote peer 10.0.0.2<41231> (local: "
    "2.30.7, remote 2.28.9)",
])
def test_the_ras_version_check_is_a_version_mismatch(prefix, message):
    log = NcclLog()
    assert log.feed(prefix + message, "paste.txt:1")
    assert list(log.errors) == ["version_mismatch"] and log.version is None
    assert log.errors["version_mismatch"]["first"].startswith("ras/ras.cc NCCL version mismatch with remote peer")


def test_the_ras_line_quoted_alone_is_no_remote_error():
    line = "NCCL version mismatch with remote peer 10.0.0.2<41231> (local: 2.30.7, remote 2.28.9)"
    assert signatures.match(line).kind == "version_mismatch"
    assert signatures.match("socketProgress: Connection closed by remote peer 10.0.0.2<41231>").kind == "remote_error"


def test_a_ras_version_mismatch_decides_the_versions_step(tmp_path):
    text = ("node-a:4242:4301 [0] NCCL INFO NCCL version 2.30.7+cuda13.0\n"
            "node-a:4242:4301 [0] ras/ras.cc:415 (rasMsgHandleConnInit) NCCL WARN NCCL version mismatch with remote "
            "peer 10.0.0.2<41231> (local: 2.30.7, remote 2.28.9)\n")
    rc, d, path = diagnose_json(tmp_path, text)
    assert rc == 1 and d["verdict"] == "fault" and _ranked(d) == [("nccl_version_mismatch", "high")]
    assert d["findings"][0]["supporting"][-1] == (f"{path}:2: ras/ras.cc NCCL version mismatch with remote peer "
                                                  "10.0.0.2<41231> (local: 2.30.7, remote 2.28.9)")


# -- 4. ib_vdevice_mismatch at INFO (net_ib.cc ncclIbAccept v2.24.3-1+, net_ib/connect.cc v2.29+) ---------
VDEV_INFO = "NCCL INFO NET/IB : Local mergedDev mlx5_0+mlx5_1 has a different number of devices=2 as remote mlx5_0 1"


@pytest.mark.parametrize("prefix", PREFIXES)
def test_the_merged_device_count_is_read_at_info_as_a_note(prefix):
    log = NcclLog()
    assert log.feed(prefix + VDEV_INFO, "paste.txt:1")
    assert list(log.errors) == ["ib_vdevice_mismatch"] and log.errors["ib_vdevice_mismatch"]["blocking"] is False


def test_the_merged_device_note_at_info_names_no_cause(tmp_path):
    # NCCL goes on after it (no return in ncclIbAccept): a note, with no candidate of its own.
    rc, d, _ = diagnose_json(tmp_path, "node-a:1:2 [0] NCCL INFO NCCL version 2.27.7+cuda12.9\n"
                                       f"node-a:1:2 [0] {VDEV_INFO}\n")
    assert rc == 3 and d["findings"] == [] and _errors(d)["ib_vdevice_mismatch"]["count"] == 1


def test_the_fast_path_reads_the_new_info_lines_as_the_line_path(tmp_path):
    lines = [f"node-{n}:1:2 [0] {VDEV_INFO}" for n in range(3)] + [
        "node-1:1:2 [0] NCCL INFO socketPollConnect: connect to 10.0.0.2<45763> returned No route to host, retrying "
        "(1/34) after sleep for 100 msec"] * 2
    path = tmp_path / "mix.log"
    path.write_text("\n".join(lines) + "\n")
    fast, line = _read(path, bulk=True), _read(path, bulk=False)
    assert line["errors"]["ib_vdevice_mismatch"]["count"] == 3 and line["errors"]["connect_retry"]["count"] == 2
    assert fast == line


# -- 6. system_error needs NCCL's words: libfabric's EFA fork banner (efa_fork_support.c) is not one -----
FORK_BANNER = ("A process has executed an operation involving a call\nto the fork() system call to create a child "
               "process.\n\nAs a result, the Libfabric EFA provider is operating in\na condition that could result in "
               "memory corruption or\nother system errors.\n\nFor the Libfabric EFA provider to work safely when "
               "fork()\nis called please do one of the following:\n1) Set the environment variable:\n"
               "          FI_EFA_FORK_SAFE=1\n")


def test_the_fork_banner_is_fork_unsafe_only(tmp_path):
    assert signatures.match("other system errors.") is None
    rc, d, _ = diagnose_json(tmp_path, FORK_BANNER)
    assert sorted(_errors(d)) == ["efa_fork_unsafe"] and _ranked(d) == [("efa_ofi_misconfigured", "medium")]


@pytest.mark.parametrize("line", [
    "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.10.3",
    "node-2: Test NCCL failure common.cu:1017 'unhandled system error (run with NCCL_DEBUG=INFO for details) / '",
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error (run with "
    "NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
])
def test_nccls_system_error_is_still_read(line):
    assert signatures.match(line).kind == "system_error"


# -- 7. NCCL's TCP step does not speak against a cause only EFA's lines show ------------------------------
EFA_UNREACHABLE = (
    "ip-10-0-1-5:3021:3090 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
    "ip-10-0-1-5:3021:3090 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)\n"
    "ip-10-0-1-5:3021:3090 [0] NCCL INFO Using network AWS Libfabric\n"
    "ip-10-0-1-5:3021:3090 [0] virtual void PlatformAWS::log_cq_error(void*, fid_cq*, fi_cq_err_entry*, const char*):1047 "
    "NCCL WARN NET/OFI Request 0x7f2c1c0a5e00 (send) completed with error: err: 113, flags: 0, prov_errno: 15, strerror: "
    "Unreachable remote - never received a response My EFA addr: fe80::8ff:c1ff:fe2b:4a1d My host id: "
    "i-0a1b2c3d4e5f60718 Peer EFA addr: fe80::84c:7ff:fe3e:91b3 Peer host id: i-0f1e2d3c4b5a69788, len: 0\n")


def test_an_efa_unreachable_remote_is_not_spoken_against_by_the_tcp_step(tmp_path):
    rc, d, _ = diagnose_json(tmp_path, EFA_UNREACHABLE)
    assert rc == 3 and _ranked(d)[0] == ("socket_blocked", "medium")
    assert d["findings"][0]["contradicting"] == []


def test_a_tcp_failure_is_still_spoken_against_by_the_tcp_step(tmp_path):
    # The step looks for connect_refused: a refused connect without routed interfaces shown stays weighed down.
    rc, d, path = diagnose_json(tmp_path, "node-a:1:2 [0] include/socket.h:390 NCCL WARN Connect to "
                                          "10.0.0.2<45763> failed : Connection refused\n")
    blocked = next(f for f in d["findings"] if f["cause"] == "socket_blocked")
    assert blocked["contradicting"] == [f"{path}:1: NCCL's TCP connections between routed interfaces go through -> no"]


# -- 5. failure and fallback INFO lines: read as notes (NCCL goes on after each) --------------------------
FALLBACKS = [
    ("NCCL INFO NET/Plugin: Failed to find ncclNetPlugin symbol (>= v5). ncclNetPlugin symbols v4 and lower are not "
     "supported.", "plugin_unusable", ["net_plugin_not_loaded"]),  # net.cc v2.21.5-1
    ("NCCL INFO External network plugin libnccl-net.so is unsupported", "plugin_unusable",
     ["net_plugin_not_loaded"]),  # plugin/net.cc v2.30.7-1
    ("NCCL INFO Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1610612736 : CUDA error 802 'system not "
     "yet initialized'. Proceeding without NVLS support.", "nvls_fallback",
     ["fabric_manager_not_ready", "nvlink_degraded"]),  # nvls.cc v2.27.7-1
    ("NCCL INFO cuMem host allocations do not appear to be working; falling back to a /dev/shm/ based implementation. "
     "This could be due to the container runtime disabling NUMA support. To disable this warning, set "
     "NCCL_CUMEM_HOST_ENABLE=0", "cumem_host_fallback", []),  # misc/cudawrap.cc v2.27.7-1
    ("NCCL INFO Could not enable P2P between dev 0(=1a000) and dev 1(=1b000)", "p2p_unavailable", []),  # p2p.cc
    ("NCCL INFO P2P not supported between GPU0 and GPU3", "p2p_unavailable", []),  # allocator.cc v2.27.7-1
    ("NCCL INFO Call to ibv_query_ece skipped, internal_name doesn't exist", "ece_verbs_missing",
     ["rdma_core_outdated"]),  # misc/ibvwrap.cc v2.19.3-1+
    ("NCCL INFO Unable to use GIN: Peermem is not supported, nor DMA-BUF.", "gin_no_gdr", ["gdr_disabled"]),
    ("NCCL INFO Unable to recognize NCCL_NETDEVS_POLICY=max:2, using NCCL_NETDEVS_POLICY_AUTO instead.",
     "env_value_ignored", []),  # graph/topo.cc v2.30.7-1
    ("NCCL INFO Failed to open libmlx5.so[.1]", "mlx5dv_missing", []),  # misc/mlx5dvsymbols.cc v2.27.7-1
    ("NCCL INFO NET/IB: ncclIbResiliencyHandleCompletionError: Marking device 1 as permanently failed (send "
     "comm=0x7f3a2c01d2b0)", "ib_device_failover", ["ib_port_down"]),  # net_ib/p2p_resiliency.cc v2.30.7-1
    ("NCCL INFO NET/IB : There are mismatched physical devices between local (0,1) and remote (0,2). To disable this "
     "warning, set NCCL_IB_WARN_RAIL_LOCAL=0", "ib_rail_mismatch", []),  # net_ib.cc v2.27.7-1
    ("NCCL INFO Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, curr state INIT, next "
     "state RTR, local GID index 3, local GID ::ffff:10.0.0.1, remote GID ::ffff:10.0.1.1, retrying 1/34 after 100 "
     "msec of sleep", "qp_modify_retry", []),  # misc/ibvwrap.cc v2.24.3-1+
]


def test_the_modify_qp_warn_after_the_retries_is_still_a_qp_timeout():
    log = NcclLog()
    log.feed("node-a:1:2 [0] misc/ibvwrap.cc:301 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, "
             "on dev mlx5_0:1, curr state INIT, next state RTR, local GID index 3, local GID ::ffff:10.0.0.1, remote "
             "GID ::ffff:10.0.1.1", "paste.txt:1")
    assert list(log.errors) == ["qp_timeout"] and log.errors["qp_timeout"]["details"][0]["gid_index"] == 3


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("line, kind, causes", FALLBACKS, ids=[f"{k}-{i}" for i, (_, k, _) in enumerate(FALLBACKS)])
def test_a_fallback_info_line_is_a_note_of_its_kind(prefix, line, kind, causes):
    log = NcclLog()
    assert log.feed(prefix + line, "paste.txt:1")
    entry = log.errors[kind]
    assert list(log.errors) == [kind] and entry["blocking"] is False and entry["causes"] == causes
    assert entry["hosts"] == (["node-a"] if prefix else [])


def test_healthy_init_chatter_with_the_same_words_is_not_read():
    # Every rank of a healthy 2.27+ job prints the first; the rest are NCCL's own notes that name no cause.
    log = NcclLog()
    for line in ("NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
                 "NCCL INFO NET/Plugin: Failed to find ncclCollNetPlugin_v8 symbol.",
                 "NCCL INFO Could not find a path for pattern 1, falling back to simple order",
                 "NCCL INFO Call to ibv_query_ece not supported"):
        log.feed("node-a:1:2 [0] " + line, "paste.txt:1")
    assert log.errors == {}


def test_an_nvls_fallback_is_a_slow_job_s_fabric_manager_candidate(tmp_path):
    text = ("node-a:4242:4301 [0] NCCL INFO NCCL version 2.27.7+cuda12.9\n"
            f"node-a:4242:4301 [0] {FALLBACKS[2][0]}\n"
            "node-a:4242:4301 [0] NCCL INFO Using network IB\n")
    rc, d, path = diagnose_json(tmp_path, text, "--symptom", "slow")
    assert rc == 1 and d["verdict"] == "fault" and _errors(d)["nvls_fallback"]["blocking"] is False
    # dev10: the runbook's NVLS step reads the fallback as the bind failure it is (test_nvls_lines.py).
    assert _ranked(d) == [("fabric_manager_not_ready", "high"), ("nvlink_degraded", "low")]
    assert d["findings"][1]["supporting"] == [f"{path}:2: {FALLBACKS[2][0].removeprefix('NCCL INFO ')}"]


def test_the_nvls_bind_warn_is_still_a_failure():
    line = ("transport/nvls.cc:284 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1610612736 : "
            "CUDA error 802 'system not yet initialized'.")
    log = NcclLog()
    log.feed("node-a:1:2 [0] " + line, "paste.txt:1")
    assert list(log.errors) == ["nvls_failure"] and log.errors["nvls_failure"]["blocking"] is True


def test_an_unusable_plugin_is_a_plugin_not_loaded_candidate(tmp_path):
    text = ("node-a:4242:4301 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
            f"node-a:4242:4301 [0] {FALLBACKS[0][0]}\n"
            "node-a:4242:4301 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>\n")
    rc, d, _ = diagnose_json(tmp_path, text, "--symptom", "slow")
    assert "net_plugin_not_loaded" in [c for c, _ in _ranked(d)]


def test_the_fast_path_reads_each_fallback_line_as_the_line_path(tmp_path):
    lines = [f"node-{n % 3}:1:2 [0] {line}" for n, (line, _, _) in enumerate(FALLBACKS * 2)]
    path = tmp_path / "mix.log"
    path.write_text("\n".join(lines) + "\n")
    fast, line = _read(path, bulk=True), _read(path, bulk=False)
    assert line["errors"]["p2p_unavailable"]["count"] == 4
    assert fast == line == _read(path, bulk=True, find_keys_max=0)  # failure keys found one by one, or by one scan


@pytest.mark.skipif(not (Path("/work/.mirror/NVIDIA+nccl/repo") / "HEAD").exists(), reason="no NVIDIA/nccl mirror")
def test_the_core_fallback_infos_of_the_newest_tags_are_read():
    import importlib.util

    spec = importlib.util.spec_from_file_location("signature_coverage", ROOT / "benchmarks" / "signature_coverage.py")
    coverage = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(coverage)
    floors = {"v2.27.7-1": 15, "v2.30.7-1": 20}  # dev8: 4/61 and 3/120 before, of the same formats
    for tag, floor in floors.items():
        totals = coverage.totals(coverage.coverage(coverage.MIRROR, tag))
        assert totals["core_read"] >= floor and totals["core_info"] >= 60, (tag, totals)
