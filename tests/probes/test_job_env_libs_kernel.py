"""The node-side job facts of review FA-6, MF-6 and MF-7 at their edges: the RDMA userspace the job
maps or holds, NCCL's config files read as the job reads them, the IB transport overrides per NCCL
version, and the kernel log's events with one rule for the node and for pasted lines."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence.host import summarize
from allreduce_doctor.hosts.base import HostIdentity, ProcessInfo
from allreduce_doctor.hosts.live import _in_job_root
from allreduce_doctor.observations import MISSING, OK, Observation
from allreduce_doctor.parsers import parse
from allreduce_doctor.parsers.kernel import link_flaps, xid_codes
from allreduce_doctor.probes.builtins import job_rdma_userspace, nccl_conf_system, nccl_conf_user
from allreduce_doctor.probes.derive_env import gdr_level_forbids, ib_overrides, ib_timeout_default
from allreduce_doctor.probes.derive_host import kernel_events, rdma_userspace
from tests.scenarios import nodes as N
from tests.scenarios.fakehost import FakeHost

ROOT = "/proc/77/root"
PASSWD = "root:x:0:0:root:/root:/bin/bash\nbob:x:2001:2001::/data/home/bob:/bin/bash\n"
VERBS = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0"
MLX5 = "/usr/lib/x86_64-linux-gnu/libmlx5.so.1.24.50.0"


def job_host(files=None, env=None, libs=(), lib="/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", uid=2001):
    proc = ProcessInfo(77, "python3", ["python3"], dict(env or {}), True, nccl_lib=lib, rdma_libs=list(libs), uid=uid)
    return FakeHost(files={f"{ROOT}/etc/passwd": PASSWD, **(files or {})}, processes=[proc],
                    identity=HostIdentity("n", "6.8.0", 0, True))


def ok(value) -> Observation:
    return Observation("", value, OK)


# --- NCCL's files, as the job reads them (src/misc/param.cc) ------------------------------------
def test_the_user_file_is_the_job_users_home_in_the_jobs_root():
    host = job_host({f"{ROOT}/data/home/bob/.nccl.conf": "NCCL_IB_DISABLE=1\n", "/root/.nccl.conf": "NCCL_IB_HCA=mlx5\n"})
    obs = nccl_conf_user(host)
    assert (obs.status, obs.value, obs.source) == (OK, {"NCCL_IB_DISABLE": "1"}, f"{ROOT}/data/home/bob/.nccl.conf")


def test_nccl_conf_file_replaces_the_home_file_from_2_23_only():
    files = {f"{ROOT}/data/home/bob/.nccl.conf": "NCCL_NET=IB\n", f"{ROOT}/etc/job.conf": "NCCL_NET=Socket\n"}
    env = {"NCCL_CONF_FILE": "/etc/job.conf"}
    new = nccl_conf_user(job_host(files, env, lib="/usr/lib/libnccl.so.2.23.4"))
    old = nccl_conf_user(job_host(files, env, lib="/usr/lib/libnccl.so.2.22.3"))
    assert (new.value, old.value) == ({"NCCL_NET": "Socket"}, {"NCCL_NET": "IB"})


def test_a_uid_missing_from_the_jobs_passwd_leaves_the_user_file_unknown():
    obs = nccl_conf_user(job_host(uid=3333))
    assert (obs.status, obs.reason) == (MISSING, "~/.nccl.conf: the home of the job's uid 3333 is not in its /etc/passwd")


def test_the_system_file_is_the_jobs_own_etc_nccl_conf():
    host = job_host({f"{ROOT}/etc/nccl.conf": "NCCL_DEBUG=WARN\n", "/etc/nccl.conf": "NCCL_IB_DISABLE=1\n"})
    assert nccl_conf_system(host).value == {"NCCL_DEBUG": "WARN"}


def test_files_read_through_a_jobs_root_are_redacted_on_the_live_host():
    assert _in_job_root("/proc/77/root/etc/job.conf") and _in_job_root("/proc/77/cwd/nccl.env")
    assert not _in_job_root("/proc/cmdline") and not _in_job_root("/sys/class/net/eth0/mtu")


# --- the job's RDMA userspace (FA-6) -----------------------------------------------------------
def userspace(host, devices=("mlx5_0",)) -> Observation:
    ports = [{"device": d, "name": f"{d}/1"} for d in devices]
    return rdma_userspace({"node.fabric": ok({"fabric": "ib"}), "rdma.ports": ok(ports),
                           "rdma.job_userspace": job_rdma_userspace(host)})


def test_mapped_libraries_decide_whatever_the_hosts_filesystem_holds():
    obs = userspace(job_host(libs=(VERBS, MLX5)))
    assert (obs.value["missing"], obs.value["from"]) == ([], "/proc/PID/maps")


def test_a_provider_neither_mapped_nor_in_the_image_is_missing():
    host = job_host({f"{ROOT}/usr/lib/x86_64-linux-gnu/libibverbs.so.1": "",
                     "/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so": ""}, libs=(VERBS,))
    assert userspace(host).value["missing"] == ["libmlx5"]


def test_not_mapped_yet_but_in_the_image_or_its_ld_library_path_is_present():
    host = job_host({f"{ROOT}/opt/rdma/lib/libibverbs.so.1": "", f"{ROOT}/opt/rdma/lib/libibverbs/libbnxt_re-rdmav34.so": ""},
                    env={"LD_LIBRARY_PATH": "/opt/rdma/lib"})
    assert userspace(host, devices=("bnxt_re0",)).value["missing"] == []


def test_no_job_or_an_unreadable_root_is_unknown_never_missing():
    no_job = userspace(FakeHost(identity=HostIdentity("n", "6.8.0", 0, True)))
    assert (no_job.status, no_job.reason) == (MISSING, "rdma.job_userspace: no NCCL job on this node: the job's "
                                              "/proc/PID/maps decides whether its image has libibverbs")
    hidden = userspace(FakeHost(processes=[ProcessInfo(77, "python3", maps_nccl=True)]))
    assert hidden.status == MISSING and "not readable" in hidden.reason


# --- environment overrides (MF-6), per NCCL version -------------------------------------------------
@pytest.mark.parametrize("level, forbids", [("LOC", True), ("NVL", True), ("NVB", True), ("0", True),
                                            ("loc", False), ("PIX", False), ("1", False), ("SYS", False)])
def test_gdr_level_below_pix_forbids_gpudirect_and_nccl_matches_case_sensitively(level, forbids):
    assert bool(gdr_level_forbids({"NCCL_NET_GDR_LEVEL": level})) is forbids


@pytest.mark.parametrize("version, default", [("2.13.4", 14), ("2.14.3", 18), ("2.22.3", 18), ("2.23.4", 20), (None, None)])
def test_ib_timeout_default_per_nccl_tag(version, default):
    assert ib_timeout_default(version) == default


def test_ib_timeout_is_judged_at_the_jobs_default_and_undecided_without_a_version():
    assert ib_overrides({"NCCL_IB_TIMEOUT": "17"}, "ib", "2.21.5")[0][0]["var"] == "NCCL_IB_TIMEOUT"
    assert ib_overrides({"NCCL_IB_TIMEOUT": "18"}, "ib", "2.21.5") == ([], None)
    assert ib_overrides({"NCCL_IB_TIMEOUT": "17"}, "ib", "2.23.4")[0][0]["why"].startswith("below NCCL's default 20")
    found, undecided = ib_overrides({"NCCL_IB_TIMEOUT": "17"}, "ib", None)
    assert found == [] and undecided.startswith("NCCL_IB_TIMEOUT=17 is below the default of NCCL >= 2.14 (18) or 2.23 (20)")
    assert ib_overrides({"NCCL_IB_TIMEOUT": "13"}, "ib", None)[0][0]["why"].startswith("below NCCL's default 14")


@pytest.mark.parametrize("value, version", [("18", "2.23.4"), ("19", "2.30.7"), ("18", None), ("0", "2.23.4"),
                                            ("32", "2.21.5"), ("", "2.23.4")])
def test_ib_timeout_nccl_shipped_as_default_or_infinite_is_no_fault(value, version):
    """18 was NCCL's own default for v2.14.3-1..v2.22.3-1 (env.rst v2.30.7-1: "it was 18 since 2.14");
    0 and >= 32 are an infinite timeout; an empty value keeps the default (param.cc strlen > 0)."""
    assert ib_overrides({"NCCL_IB_TIMEOUT": value}, "ib", version) == ([], None)


def test_adaptive_routing_off_matters_on_infiniband_from_2_16_only():
    env = {"NCCL_IB_ADAPTIVE_ROUTING": "0"}
    assert [f["var"] for f in ib_overrides(env, "ib", "2.21.5")[0]] == ["NCCL_IB_ADAPTIVE_ROUTING"]
    assert ib_overrides(env, "roce", "2.21.5") == ([], None)
    assert ib_overrides(env, "ib", "2.15.5") == ([], None)
    assert ib_overrides(env, None, "2.21.5")[1] == "NCCL_IB_ADAPTIVE_ROUTING=0 matters on InfiniBand only: the fabric is not known"


def test_retry_count_below_seven():
    assert [f["var"] for f in ib_overrides({"NCCL_IB_RETRY_CNT": "6"}, "ib", None)[0]] == ["NCCL_IB_RETRY_CNT"]
    assert ib_overrides({"NCCL_IB_RETRY_CNT": "7"}, "ib", None) == ([], None)


# --- the kernel log (MF-7): one rule for the node and for pasted lines ---------------------------
def rows(text: str) -> list[dict]:
    return parse("dmesg_lines", text)


def test_a_boot_link_up_is_not_a_flap_a_later_down_is():
    assert link_flaps(rows(N.DMESG_BOOT_LINKS)) == {}
    assert link_flaps(rows(N.DMESG_BOOT_LINKS + N.DMESG_FLAP)) == {"enp26s0np0": 4}


def test_application_xids_are_left_out():
    assert xid_codes(rows(N.DMESG_XID_31 + N.DMESG_XID_79 + N.DMESG_XID_79)) == [79]


def test_only_uncorrectable_aer_is_counted_as_an_error():
    nic = ok([{"bdf": "0000:1a:00.0", "kind": "nic"}])  # the device the lines name is on NCCL's path
    events = kernel_events({"kernel.dmesg": ok(rows(N.DMESG_AER_CORRECTED + N.DMESG_AER_UNCORRECTED)),
                            "pci.lspci": nic}).value
    assert (events["aer_uncorrected"], events["aer_corrected"]) == (2, 2)


def test_pasted_kernel_lines_get_the_nodes_flap_rule():
    blocks = [{"tool": "kernel_log", "value": rows(N.DMESG_BOOT_LINKS), "where": "paste.txt:1"}]
    assert summarize(blocks, [])["link_flaps"] == {}
    blocks[0]["value"] = rows(N.DMESG_BOOT_LINKS + N.DMESG_FLAP)
    assert summarize(blocks, [])["link_flaps"] == kernel_events({"kernel.dmesg": ok(blocks[0]["value"])}).value["link_flaps"]


# --- the live host: one /proc scan per sample; the maps lines that name the RDMA userspace ---------
def test_one_process_scan_serves_every_probe_of_a_sample(monkeypatch):
    from allreduce_doctor.hosts.live import LiveHost

    host, scans = LiveHost(), []
    monkeypatch.setattr(host, "_scan_processes", lambda: scans.append(1) or [ProcessInfo(1, "p")])
    host.processes(), host.processes()
    host.next_sample(0)
    host.processes()
    assert len(scans) == 2


def test_maps_name_libnccl_and_the_rdma_userspace(monkeypatch, tmp_path):
    import builtins

    from allreduce_doctor.hosts import maps_scan
    from allreduce_doctor.hosts.budget import OutputBudget

    maps = tmp_path / "maps"
    maps.write_bytes(b"7f1-7f2 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5\n"
                     b"7f3-7f4 r-xp 0 08:01 2 " + VERBS.encode() + b"\n7f5-7f6 r-xp 0 08:01 3 " + MLX5.encode() + b"\n"
                     b"7f7-7f8 r-xp 0 08:01 4 /usr/lib/x86_64-linux-gnu/libmlx5dv-not-a-provider.so\n")
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda path, *a, **k: real_open(maps if path == "/proc/99/maps" else path, *a, **k))
    assert maps_scan.mapped_libs(99, OutputBudget()) == ("/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", [VERBS, MLX5], "", [])


def test_maps_name_the_net_plugin_and_libfabric_apart_from_libnccl(monkeypatch, tmp_path):
    """A plugin mapped below libnccl (libnccl-net-ofi.so) is the plugin, not NCCL's own library."""
    import builtins

    from allreduce_doctor.hosts import maps_scan
    from allreduce_doctor.hosts.budget import OutputBudget

    plugin, fabric = "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so", "/opt/amazon/efa/lib/libfabric.so.1.25.0"
    maps = tmp_path / "maps"
    maps.write_bytes(f"7f0-7f1 r-xp 0 08:01 9 {plugin}\n7f1-7f2 r-xp 0 08:01 1 /usr/lib/libnccl.so.2.23.4\n"
                     f"7f3-7f4 r-xp 0 08:01 2 {fabric}\n7f5-7f6 r-xp 0 08:01 3 /usr/lib/libnccl-tuner-x.so\n".encode())
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda path, *a, **k: real_open(maps if path == "/proc/99/maps" else path, *a, **k))
    assert maps_scan.mapped_libs(99, OutputBudget()) == ("/usr/lib/libnccl.so.2.23.4", [], "", [plugin, fabric])
