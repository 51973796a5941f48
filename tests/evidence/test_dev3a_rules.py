"""Rules from batch 3's dev misses (issue 12, dev3a: containers, sockets, shared memory), each from a
primary source, through `diagnose --evidence FILE --format json` in process (the CLI's main)."""

from __future__ import annotations

from tests.evidence.helpers import diagnose_json as _diagnose


def _step(d: dict, node: str) -> dict:
    return next(p for p in d["path"] if p["node"] == node)


def _ranked(d: dict) -> list[str]:
    return [f["cause"] for f in d["findings"]]


def _decided_by(tmp_path, text: str, node: str, fact: str, rows) -> tuple[int, dict]:
    """Diagnose `text`; the step `node` says yes on exactly `rows` (a callable of the paste's path)."""
    rc, d, path = _diagnose(tmp_path, text)
    step = _step(d, node)
    assert step["outcome"] == "yes"
    assert step["value"][fact] == rows(path)
    return rc, d


# -- a connect to a loopback address: the peer listens on loopback ----------------------------------
# NCCL 2.18.5 misc/socket.cc socketStartConnect, as PyTorch's "Last error:" repeats it.
LOOPBACK = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1331, unhandled system error "
            "(run with NCCL_DEBUG=INFO for details), NCCL version 2.18.5\n"
            "Last error:\n"
            "socketStartConnect: Connect to 127.0.0.1<45069> failed : Software caused connection abort\n")


def test_a_connect_to_a_loopback_address_decides_the_interface_step(tmp_path):
    rc, d = _decided_by(tmp_path, LOOPBACK, "nccl_log.socket_iface", "log.job.bad_socket_ifaces", lambda path: [
        {"error": "connect_aborted", "address": "127.0.0.1", "source": f"{path}:3"}])
    assert rc == 1 and d["root_cause"]["id"] == "wrong_socket_ifname" and d["root_cause"]["confidence"] == "high"


def test_a_connect_to_a_routed_address_leaves_the_interface_step_alone(tmp_path):
    _, d, _ = _diagnose(tmp_path, LOOPBACK.replace("127.0.0.1", "10.1.2.3"))
    assert _step(d, "nccl_log.socket_iface")["outcome"] == "no"
    assert d["verdict"] == "inconclusive" and d["root_cause"]["confidence"] == "medium"


# -- no usable interface inside a container's own network namespace --------------------------------
# NCCL 2.2 (NVIDIA/nccl-tests#14) printed `host:pid:tid [dev] file:line WARN msg`, without "NCCL".
CONTAINER = "e66aa18dc444"
NO_IFACE = (f"{CONTAINER}:3171:3171 [0] include/socket.h:311 WARN Socket creation failed : "
            "Address family not supported by protocol\n"
            "NCCL failure common.cu:874 'unhandled system error'\n")


def test_no_usable_interface_on_a_host_named_like_a_container_is_its_network_namespace(tmp_path):
    rc, d = _decided_by(tmp_path, NO_IFACE, "nccl_log.bridge", "log.job.bridge_network", lambda path: [
        {"error": "no_socket_iface", "host": CONTAINER, "container": "own network namespace", "source": f"{path}:1"}])
    assert rc == 1 and _ranked(d)[:2] == ["container_network_isolation", "wrong_socket_ifname"]


def test_the_same_line_on_a_host_with_a_plain_name_is_the_interface_setting(tmp_path):
    rc, d, _ = _diagnose(tmp_path, NO_IFACE.replace(CONTAINER, "gpu-node-07"))
    assert _step(d, "nccl_log.bridge")["outcome"] == "no"
    assert rc == 1 and d["root_cause"]["id"] == "wrong_socket_ifname"


def test_a_host_of_twelve_digits_is_not_taken_for_a_container(tmp_path):
    _, d, _ = _diagnose(tmp_path, NO_IFACE.replace(CONTAINER, "201905230001"))
    assert d["root_cause"]["id"] == "wrong_socket_ifname"


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


# -- a one-host run: the network transport's causes drop out -----------------------------------------
# NCCL 2.4.8 prints these init lines (bootstrap.cc, net.cc, ibvwrap.cc, net_socket.cc); nccl-tests ends a
# run with its average bus bandwidth (common.cu).
H = "h0913n:12877:12877 [0] NCCL INFO "
INIT = (f"{H}Bootstrap : Using [0]enp0s31f6:192.168.97.149<0>\n{H}NET/Plugin : No plugin found (libnccl-net.so).\n"
        "h0913n:12877:12877 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]\n"
        f"{H}NET/Socket : Using [0]enp0s31f6:192.168.97.149<0>\nNCCL version 2.4.8+cuda10.1\n")
LISTED = ONE_HOST.split("box-1: Test")[0].replace("box-1", "h0913n")
DONE = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 10.5213\n"


def test_a_missing_verbs_library_on_one_host_points_at_nothing(tmp_path):
    # Ranks of one host connect over P2P or SHM; NET only when both cannot (transport.cc).
    rc, d, _ = _diagnose(tmp_path, LISTED + INIT + DONE)
    assert rc == 3 and d["root_cause"] is None and d["healthy"] is None and _ranked(d) == []
    assert d["inconclusive"][-1]["reason"].startswith("nothing in this text points at a cause")


def test_a_missing_verbs_library_between_hosts_stays_a_candidate(tmp_path):
    _, d, _ = _diagnose(tmp_path, INIT + "gpu-b:1:1 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.2<0>\n")
    assert "container_missing_libibverbs" in _ranked(d)
