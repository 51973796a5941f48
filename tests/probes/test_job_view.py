"""The job's view: its interfaces, /dev/infiniband, verbs providers and memlock are read from the
job's process (probes/job_view.py) and judged there (derive_job_view.py, socket_ifname,
rdma_userspace); the host's view only when no job is found, and the reason says so."""

from __future__ import annotations

from allreduce_doctor.hosts.base import ProcessInfo
from allreduce_doctor.observations import MISSING, OK, Observation
from allreduce_doctor.probes import job_view
from allreduce_doctor.probes.derive_host import rdma_userspace
from allreduce_doctor.probes.derive_job import socket_ifname
from allreduce_doctor.probes.derive_job_view import (
    job_memlock,
    provider_for,
    rdma_devices_seen,
)
from allreduce_doctor.probes.job_view import user_ns_of
from tests.scenarios.fakehost import FakeHost


def ok(value) -> Observation:
    return Observation("", value, OK)


def missing(reason: str) -> Observation:
    return Observation("", None, MISSING, reason=reason)


JOB = ProcessInfo(77, "python3", env={"IBV_DRIVERS": "bnxt_re"}, maps_nccl=True)
LIMITS = ("Limit                     Soft Limit           Hard Limit           Units     \n"
          "Max locked memory         65536                65536                bytes     \n")


def test_the_builtins_read_the_jobs_own_proc_files():
    host = FakeHost(files={
        "/proc/77/net/dev": "Inter-| Receive\n face |bytes\n    lo: 1 2\n  eth0: 3 4\n",
        "/proc/77/limits": LIMITS, "/proc/77/status": "Name:\tpython3\nCapEff:\t00000000a80425fb\n",
        "/proc/77/root/etc/passwd": "", "/proc/77/root/etc/libibverbs.d/mlx5.driver": "# rdma-core\n  driver mlx5\n",
        "/proc/77/root/etc/libibverbs.d/efa.driver": "driver /opt/lib/libefa\n",
        "/sys/class/infiniband/rocep26s0f0/hca_type": "BCM57508", "/sys/class/infiniband/mlx5_0/hca_type": "MT4129",
    }, links={"/sys/class/infiniband/rocep26s0f0/device/driver": "/sys/bus/pci/drivers/bnxt_en",
              "/sys/class/infiniband/mlx5_0/device": "/sys/devices/pci0000:1a/0000:1a:00.0"},
        processes=[JOB])
    assert job_view.job_net_ifaces(host).value == {"pid": 77, "names": ["lo", "eth0"], "ipv6": None,
                                                   "ipv4_routed": None, "stray_ipv4": None}  # no address files here
    uverbs = job_view.job_uverbs(host)
    assert (uverbs.status, uverbs.value) == (OK, {"pid": 77, "devices": []})  # the root is read, no /dev/infiniband
    # docker's default capability set (CapEff a80425fb) has no CAP_IPC_LOCK (bit 14)
    assert job_view.job_limits(host).value == {"pid": 77, "memlock_soft": 65536, "memlock_hard": 65536,
                                               "cap_ipc_lock": False, "user_ns": None}  # no uid_map here: unread
    assert job_view.job_verbs_config(host).value == {
        "pid": 77, "files": {"efa.driver": ["/opt/lib/libefa"], "mlx5.driver": ["mlx5"]}, "env": {"IBV_DRIVERS": "bnxt_re"}}
    assert job_view.rdma_device_drivers(host).value == {"mlx5_0": None, "rocep26s0f0": "bnxt_en"}


def test_without_a_job_every_job_fact_is_missing_with_the_reason():
    host = FakeHost(files={"/proc/self/limits": LIMITS})
    for probe in (job_view.job_net_ifaces, job_view.job_uverbs, job_view.job_limits, job_view.job_verbs_config):
        obs = probe(host)
        assert (obs.status, obs.reason) == (MISSING, "no NCCL job found on this node")


def test_the_provider_follows_the_kernel_driver_not_the_name():
    assert provider_for("rocep26s0f0", "bnxt_en") == ("bnxt_re", "its kernel driver bnxt_en")
    assert provider_for("mlx5_0", "mlx5_core.sf")[0] == "mlx5"
    assert provider_for("irdma0", "ice")[0] == "irdma"
    assert provider_for("rocep26s0f0", None) == (None, "its name")
    assert provider_for("mlx5_3", None)[0] == "mlx5"  # no driver link read: the name, as before
    assert provider_for("rxe0", "mlx5_core")[0] == "rxe"  # a software device on an mlx5 netdev


def _ifname(spec: str, job: Observation) -> Observation:
    env = ok({"job_found": True, "vars": {"NCCL_SOCKET_IFNAME": spec}})
    host = ok([{"name": "lo"}, {"name": "bond0"}, {"name": "docker0"}])
    return socket_ifname({"nccl.env": env, "net.all_ifaces": host, "net.job_ifaces": job})


def test_socket_ifname_judges_the_jobs_namespace_and_says_when_it_fell_back_to_the_host():
    pod = ok({"pid": 77, "names": ["lo", "eth0"]})
    found = _ifname("eth0", pod)
    assert (found.value, found.reason) == ({"value": "eth0", "matched": ["eth0"], "problem": None},
                                           "interfaces of the job's network namespace")
    assert _ifname("bond0", pod).value["problem"] == "no interface in the job's network namespace matches"
    host = _ifname("eth0", missing("no NCCL job found on this node"))
    assert host.value["problem"] == "no interface on this node matches"
    assert host.reason == "interfaces of this node's /sys/class/net (judged on the host: no NCCL job found on this node)"


def test_dev_infiniband_is_the_jobs_and_the_hosts_only_without_a_job():
    seen = rdma_devices_seen({"rdma.job_uverbs": ok({"pid": 77, "devices": []}), "rdma.uverbs": ok(True)})
    assert (seen.value["present"], seen.reason) == (
        False, "the job's /proc/77/root/dev/infiniband has no uverbs* device (this node's /dev/infiniband has them)")
    host = rdma_devices_seen({"rdma.job_uverbs": missing("no NCCL job found on this node"), "rdma.uverbs": ok(True)})
    assert (host.value, host.reason) == ({"present": True, "from": "host", "devices": None},
                                         ("judged on this node's /dev/infiniband instead of the job's "
                                          "(no NCCL job found on this node)"))
    assert rdma_devices_seen({"rdma.job_uverbs": missing("x"), "rdma.uverbs": missing("y")}).status == MISSING


def _memlock(soft, cap, user_ns="initial") -> Observation:
    return job_memlock({"job.limits": ok({"pid": 77, "memlock_soft": soft, "memlock_hard": soft, "cap_ipc_lock": cap,
                                          "user_ns": user_ns})})


def test_memlock_64k_without_ipc_lock_is_the_fault_unlimited_or_the_capability_is_fine():
    fault = _memlock(65536, False)
    assert fault.value == {"memlock": "64 KiB", "cap_ipc_lock": False, "user_ns": "initial", "pid": 77, "problem": True}
    assert fault.reason == ("the job's memlock limit 64 KiB, no CAP_IPC_LOCK (/proc/77/limits, status, uid_map): "
                            "ibv_reg_mr cannot pin one of NCCL's 512 KiB LL buffers")
    assert _memlock("unlimited", False).value["problem"] is False
    assert _memlock(65536, True).value["problem"] is False
    assert _memlock(65536, None).value["problem"] is None  # CapEff unread: unknown
    assert _memlock(8 << 20, False).value == {"memlock": "8 MiB", "cap_ipc_lock": False, "user_ns": "initial", "pid": 77,
                                              "problem": None}
    unread = job_memlock({"job.limits": missing("no NCCL job found on this node")})
    assert (unread.status, unread.reason) == (MISSING, "the job's memlock limit was not read (no NCCL job found on this node)")


def test_cap_ipc_lock_in_a_child_user_namespace_does_not_lift_the_memlock_limit():
    """capable(CAP_IPC_LOCK) asks init_user_ns (kernel/capability.c; ib_umem_get, mm/mlock.c)."""
    child = _memlock(65536, True, "child")
    assert child.value == {"memlock": "64 KiB", "cap_ipc_lock": True, "user_ns": "child", "pid": 77, "problem": True}
    assert child.reason == ("the job's memlock limit 64 KiB, CAP_IPC_LOCK only in a child user namespace (uid_map), which "
                            "does not lift the limit (/proc/77/limits, status, uid_map): "
                            "ibv_reg_mr cannot pin one of NCCL's 512 KiB LL buffers")
    unread = _memlock(65536, True, None)  # the capability is held, where it counts is not known
    assert (unread.value["problem"], unread.reason) == (
        None, "the job's memlock limit 64 KiB, CAP_IPC_LOCK, its user namespace unread (uid_map) (/proc/77/limits, status, uid_map)")
    assert _memlock("unlimited", True, "child").value["problem"] is False
    assert _memlock(65536, False, None).value["problem"] is True  # no capability anywhere: the namespace does not matter


def test_the_uid_map_tells_the_initial_user_namespace_from_a_child():
    assert user_ns_of("         0          0 4294967295\n") == "initial"
    assert user_ns_of("         0       1000          1\n         1     100000      65536\n") == "child"  # rootless podman
    assert user_ns_of("         0     100000      65536\n") == "child"  # docker userns-remap
    assert user_ns_of("         0          0 4294967294\n") == "child"
    assert user_ns_of("") is None and user_ns_of("not a map\n") is None


def _userspace(mapped, files, drivers, config) -> Observation:
    ports = [{"device": d, "port": 1} for d in drivers]
    return rdma_userspace({
        "node.fabric": ok({"fabric": "roce"}), "rdma.ports": ok(ports),
        "rdma.job_userspace": ok({"pid": 77, "mapped": mapped, "files": files, "root": "/proc/77/root"}),
        "rdma.device_drivers": ok(drivers), "rdma.job_verbs_config": config})


LIB = "/usr/lib/x86_64-linux-gnu"
BNXT = {"rocep26s0f0": "bnxt_en", "rocep60s0f0": "bnxt_en"}


def test_renamed_broadcom_devices_need_bnxt_re_and_the_maps_decide_once_libibverbs_is_loaded():
    config = ok({"pid": 77, "files": {"mlx5.driver": ["mlx5"]}, "env": {}})
    loaded = _userspace([f"{LIB}/libibverbs.so.1.14.50.0", f"{LIB}/libmlx5.so.1.24.50.0"],
                        [f"{LIB}/libibverbs.so.1", f"{LIB}/libibverbs/libbnxt_re-rdmav34.so"], BNXT, config)
    # the image holds libbnxt_re, but libibverbs loaded without it: the maps win over the listing
    assert (loaded.value["needed"], loaded.value["missing"], loaded.value["from"]) == (
        ["ibverbs", "bnxt_re"], ["libbnxt_re"], "/proc/PID/maps (libibverbs loaded)")
    fine = _userspace([f"{LIB}/libibverbs.so.1.14.50.0", f"{LIB}/libbnxt_re.so.1.24.50.0"], [], BNXT, config)
    assert fine.value["missing"] == []


def test_a_provider_file_without_its_driver_file_is_missing_before_nccl_loads_it():
    files = [f"{LIB}/libibverbs.so.1", f"{LIB}/libibverbs/libmlx5-rdmav34.so"]
    mlx = {"mlx5_0": "mlx5_core"}
    none = _userspace([], files, mlx, ok({"pid": 77, "files": {}, "env": {}}))
    assert (none.value["missing"], none.value["no_driver_file"]) == (["libmlx5"], ["/etc/libibverbs.d/mlx5.driver"])
    by_env = _userspace([], files, mlx, ok({"pid": 77, "files": {}, "env": {"IBV_DRIVERS": "mlx5"}}))
    assert by_env.value["missing"] == []
    unread = _userspace([], files, mlx, missing("no NCCL job found on this node"))
    assert unread.value["missing"] == []  # the config not read: judged on the files alone, as before
    # an rdma-core under another prefix (LD_LIBRARY_PATH) reads its own config dir: not judged
    other = _userspace([], ["/opt/conda/lib/libibverbs.so.1", f"{LIB}/libibverbs/libmlx5-rdmav34.so"], mlx,
                       ok({"pid": 77, "files": {}, "env": {}}))
    assert other.value["missing"] == []


def test_a_device_whose_provider_is_unknown_leaves_the_answer_unknown():
    obs = _userspace([f"{LIB}/libibverbs.so.1.14.50.0"], [], {"rocep26s0f0": None}, missing("x"))
    assert (obs.status, obs.reason) == (MISSING, ("the verbs provider of rocep26s0f0 is not known "
                                                  "(its kernel driver, /sys/class/infiniband/DEV/device/driver)"))


def test_probes_list_shows_what_each_job_view_builtin_reads():
    from allreduce_doctor.doctor import load_catalogue

    probes = load_catalogue().probes
    touches = {pid: probes[pid].touches()[0] for pid in job_view.BUILTINS}
    assert "/proc/PID/net/dev" in touches["job_net_ifaces"]
    assert "/proc/PID/root/dev/infiniband/uverbs*" in touches["job_uverbs"]
    assert "/proc/PID/limits" in touches["job_limits"] and "/proc/PID/status CapEff" in touches["job_limits"]
    assert "/proc/PID/uid_map" in touches["job_limits"]
    assert "/proc/PID/root/etc/libibverbs.d/*" in touches["job_verbs_config"]
    assert "/sys/class/infiniband/*/device/driver" in touches["rdma_device_drivers"]


# The formats of net/ipv6/addrconf.c if6_seq_show and net/ipv4/fib_trie.c fib_route_seq_show /
# fib_trie_seq_show, as a pod with eth0 (10.244.1.7/24 and fe80::) and net1 (no address) prints them.
POD_INET6 = ("00000000000000000000000000000001 01 80 10 80       lo\n"
             "fe80000000000000a8c1abfffe2e1f01 03 40 20 80     eth0\n")
POD_ROUTE = ("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
             "eth0\t00000000\t0101F40A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
             "eth0\t0001F40A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
POD_TRIE = ("Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n"
            "Local:\n  +-- 10.244.1.0/24 2 0 2\n     |-- 10.244.1.7\n        /32 host LOCAL\n"
            "     |-- 127.0.0.1\n        /32 host LOCAL\n")


def _pod(**files) -> FakeHost:
    base = {"/proc/77/net/dev": "Inter-| Receive\n face |bytes\n    lo: 1 2\n  eth0: 3 4\n  net1: 5 6\n",
            "/proc/77/net/if_inet6": POD_INET6, "/proc/77/net/route": POD_ROUTE, "/proc/77/net/fib_trie": POD_TRIE}
    return FakeHost(files={k: v for k, v in {**base, **files}.items() if v is not None}, processes=[JOB])


def test_the_jobs_interfaces_carry_the_addresses_nccl_can_take():
    assert job_view.job_net_ifaces(_pod()).value == {"pid": 77, "names": ["lo", "eth0", "net1"], "ipv6": ["eth0"],
                                                     "ipv4_routed": ["eth0"], "stray_ipv4": []}
    # a /32 address no connected route covers (a gateway route does not place it): it may be net1's
    stray = job_view.job_net_ifaces(_pod(**{"/proc/77/net/fib_trie": POD_TRIE.replace("10.244.1.7", "192.168.5.5")}))
    assert stray.value["stray_ipv4"] == ["192.168.5.5"]
    unread = job_view.job_net_ifaces(_pod(**{"/proc/77/net/if_inet6": None, "/proc/77/net/fib_trie": None}))
    assert (unread.value["ipv6"], unread.value["ipv4_routed"], unread.value["stray_ipv4"]) == (None, ["eth0"], None)


def _addr_ifname(spec: str, job: dict, family: str | None = None) -> Observation:
    env = {"NCCL_SOCKET_IFNAME": spec, **({"NCCL_SOCKET_FAMILY": family} if family else {})}
    return socket_ifname({"nccl.env": ok({"vars": env, "job_found": True}), "net.all_ifaces": ok([{"name": "eth0"}]),
                          "net.job_ifaces": ok({"pid": 77, "names": ["lo", "eth0", "net1"], **job})})


ADDRESSED = {"ipv6": ["eth0"], "ipv4_routed": ["eth0"], "stray_ipv4": []}


def test_an_interface_nccl_cannot_take_for_want_of_an_address_is_the_problem():
    """src/misc/socket.cc ncclFindInterfaces skips an interface without an AF_INET/AF_INET6 address."""
    assert _addr_ifname("net1", ADDRESSED).value["problem"] == (
        "net1 has no IPv4 or IPv6 address in the job's network namespace: NCCL lists only interfaces with one")
    assert _addr_ifname("eth0", ADDRESSED).value["problem"] is None
    assert _addr_ifname("=eth0,net1", ADDRESSED).value["problem"] is None  # eth0 is found
    v6_only = dict(ADDRESSED, ipv4_routed=[])
    assert _addr_ifname("eth0", v6_only, "AF_INET").value["problem"] == (
        "eth0 has no IPv4 address in the job's network namespace: NCCL lists only interfaces with one")
    assert _addr_ifname("eth0", v6_only).value["problem"] is None


def test_an_unread_address_file_or_a_stray_address_decides_nothing_new():
    for job in (dict(ADDRESSED, ipv6=None), dict(ADDRESSED, ipv4_routed=None), dict(ADDRESSED, stray_ipv4=["10.9.9.9"]),
                {}):
        assert _addr_ifname("net1", job).value["problem"] is None  # by name only, as before the addresses were read
