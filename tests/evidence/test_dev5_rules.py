"""General weaknesses of the evidence reading (issue 12, dev5): kernel lines pasted alone, the lines a
differential step cites against a cause, aws-ofi-nccl's INFO chatter, NCCL 2.27+'s out-of-band and
bootstrap lines, HTTP clients' connection errors, and a bare watchdog timeout. Each rule cites its
primary source beside it; every line here is in the shape its version prints."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import facts


def _ranked(d: dict) -> list[str]:
    return [f["cause"] for f in d["findings"]]


def _kinds(tmp_path, text: str) -> set[str]:
    return set(facts(tmp_path, text)["log.nccl"]["errors"])


# -- aws-ofi-nccl: its INFO lines are init chatter, not errors ------------------------------------
# NCCL_OFI_INFO messages at v1.3.0, v1.7.4-aws, v1.14.0 and v1.21.1 (src/nccl_ofi_net.c(pp)), as a
# paste without NCCL's prefix shows them: the plugin prefixes every message with "NET/OFI ".
OFI_INFO = [
    "NET/OFI Using aws-ofi-nccl 1.7.4-aws",
    "NET/OFI Selected Provider is efa (found 4 nics)",
    "NET/OFI Selected provider is efa, fabric is efa (found 32 nics)",
    "NET/OFI Using Libfabric version 1.18",
    "NET/OFI Setting FI_OPT_MAX_MSG_SIZE not supported.",
    "NET/OFI Support for DMA-BUF registrations: false",
    "NET/OFI Creating one domain per process",
    "NET/OFI Using transport protocol RDMA (platform set)",
    "NET/OFI Could not disable CUDA API usage for HMEM, disabling GDR",
]


@pytest.mark.parametrize("line", OFI_INFO)
def test_an_ofi_info_line_is_no_error(line):
    sig = signatures.match(line)
    assert sig is not None and sig.kind == "ofi_plugin_running", (line, sig and sig.kind)


def test_bare_ofi_init_lines_give_no_blocking_candidate(tmp_path):
    _, d, _ = _diagnose(tmp_path, "\n".join(OFI_INFO[:2]) + "\n")
    assert not any(f["cause"] == "efa_ofi_misconfigured" for f in d["findings"])
    assert "ofi_error" not in _kinds(tmp_path, "\n".join(OFI_INFO) + "\n")


@pytest.mark.parametrize("line, kind", [
    # NCCL_OFI_WARN messages (v1.3.0 nccl_ofi_net.c; v1.21.1 nccl_ofi_rdma.cpp, nccl_ofi_net.cpp)
    ("create_nccl_ofi_component:459 NCCL WARN NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid argument", "ofi_error"),
    ("NET/OFI Initializing plugin failed", "ofi_error"),
    ("NET/OFI Creating domain failed: -12", "ofi_error"),
    ("NET/OFI Unable to find a protocol that worked.  Failing initialization.", "ofi_no_provider"),
    ("NET/OFI Endpoint does not support RMA operations, required for RDMA protocol!", "ofi_no_provider"),
])
def test_ofi_warn_lines_stay_errors(line, kind):
    assert signatures.match(line).kind == kind


def test_bare_ofi_info_lines_say_the_plugin_runs_and_name_no_cause(tmp_path):
    rc, d, _ = _diagnose(tmp_path, "\n".join(OFI_INFO[:3]) + "\n")
    assert d["findings"] == [] and d["verdict"] == "inconclusive"
    assert facts(tmp_path, OFI_INFO[1] + "\n")["log.nccl"]["errors"]["ofi_plugin_running"]["blocking"] is False


# -- kernel lines pasted alone: a candidate, or what the line says and what to paste -------------
# (the trunk's peermem and AER checks want the node's GPUs and PCI tree, which a dmesg paste lacks)
def test_a_lone_peermem_error_names_gpudirect_rdma(tmp_path):
    line = "[Thu Sep 19 02:29:46 2024] nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing\n"
    rc, d, path = _diagnose(tmp_path, line)
    first = d["findings"][0]
    assert (first["cause"], first["confidence"]) == ("gdr_disabled", "medium")
    assert first["supporting"] == [f"{path}:1: {line.strip()}"]
    assert first["next_step"].startswith("paste `lsmod | grep -e nvidia_peermem -e nv_peer_mem`")


def test_a_lone_uncorrectable_aer_names_pcie_aer_errors(tmp_path):
    text = ("[ 5678.123] pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0\n"
            "[ 5678.124] pcieport 0000:00:01.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)\n")
    _, d, _ = _diagnose(tmp_path, text)
    assert _ranked(d)[0] == "pcie_aer_errors"
    assert d["findings"][0]["next_step"].startswith("paste `lspci -vvv` (or `lspci -tv`)")


def test_a_corrected_aer_alone_names_no_cause(tmp_path):
    text = "[ 5678.123] pcieport 0000:00:01.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)\n"
    _, d, _ = _diagnose(tmp_path, text)
    assert d["findings"] == []


def test_a_lone_mlx5_health_event_says_what_it_means_and_what_to_paste(tmp_path):
    line = "[   17.982092] mlx5_core 0000:41:00.0: poll_health:852:(pid 0): device's health compromised - reached miss count\n"
    rc, d, path = _diagnose(tmp_path, line)
    assert d["findings"] == [] and d["verdict"] == "inconclusive" and d["healthy"] is None
    reasons = [i["reason"] for i in d["inconclusive"] if i["node"] == "evidence"]
    assert reasons[0] == (f"{path}:1: the mlx5 adapter's firmware stopped answering (its health counter stalled, a "
                          "fatal sensor, a command timed out): the driver resets or unloads the device, and its RDMA "
                          "ports stop carrying traffic; no cause of the catalogue covers it")
    assert reasons[1].startswith("nothing in this text points at a cause; paste")


# -- an HTTP client's connection error is no NCCL peer -----------------------------------------------
HTTP_ERRORS = [
    # urllib3 / requests (a vLLM or Ray client, a model download), Python's own exceptions
    "requests.exceptions.ConnectionError: HTTPConnectionPool(host='localhost', port=8000): Max retries exceeded with "
    "url: /v1/models (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f3a2c1d0>: "
    "Failed to establish a new connection: [Errno 111] Connection refused'))",
    "ConnectionRefusedError: [Errno 111] Connection refused",
    "urllib.error.URLError: <urlopen error [Errno 111] Connection refused>",
    "requests.exceptions.ConnectTimeout: HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded "
    "with url: /api/models (Caused by ConnectTimeoutError(<urllib3.connection.HTTPSConnection object at 0x7f>, "
    "'Connection to huggingface.co timed out. (connect timeout=10)'))",
    "TimeoutError: [Errno 110] Connection timed out",
]


@pytest.mark.parametrize("line", HTTP_ERRORS)
def test_an_http_clients_connection_error_is_no_nccl_connect_failure(line):
    sig = signatures.match(line)
    assert sig is None or sig.kind not in ("connect_refused", "connect_timeout"), sig.kind


@pytest.mark.parametrize("line, kind", [
    ("misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : Connection refused", "connect_refused"),
    ("NCCL INFO Call to connect returned Connection refused, retrying", "connect_retry"),  # a retry, not yet a failure
    ("misc/socket.cc:578 NCCL WARN socketStartConnect: connect to 10.0.0.2<45763> returned Connection refused, "
     "exceeded error retry count after 35 attempts", "connect_refused"),
    ("misc/socket.cc:538 NCCL WARN Net : Call to recv from 10.0.0.2<45678> failed : Connection timed out", "connect_timeout"),
])
def test_nccls_own_connect_failures_keep_their_kind(line, kind):
    assert signatures.match(line).kind == kind


def test_c10d_rendezvous_socket_errors_are_the_rendezvous_retrying():
    # PyTorch torch/csrc/distributed/c10d/socket.cpp (the TCPStore client): one address's errno, which c10d retries
    # (dev10: the rendezvous, not NCCL's sockets; test_c10d_rendezvous.py)
    line = ("[W1218 20:27:21.426415540 socket.cpp:752] [c10d] The client socket has failed to connect to "
            "[node-1]:29500 (errno: 111 - Connection refused).")
    assert signatures.match(line).kind == "c10d_store_retry"
    assert signatures.match(line.replace("111 - Connection refused", "110 - Connection timed out")).kind == "c10d_store_retry"


# -- a bare watchdog timeout: no cause above low, and the paste that tells them apart ----------------
WATCHDOG = ("[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [PG 0 Rank 0] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=131072000, NumelOut=131072000, "
            "Timeout(ms)=600000) ran for 600081 milliseconds before timing out.\n")


def test_a_bare_watchdog_timeout_names_no_topology_cause_first_and_asks_for_every_ranks_lines(tmp_path):
    rc, d, _ = _diagnose(tmp_path, WATCHDOG)
    assert [(f["cause"], f["confidence"]) for f in d["findings"]] == [
        ("fabric_unreachable", "low"), ("iommu_enabled", "low"), ("pcie_acs_enabled", "low")]
    assert all(f["contradicting"] == [] for f in d["findings"])  # the timeout is no line a check reads against
    assert d["findings"][0]["next_step"].startswith(
        "paste the NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET output of every rank")
    assert "TORCH_NCCL_DESYNC_DEBUG=1" in d["findings"][0]["next_step"]


def test_the_watchdog_beside_redirecting_acs_lines_ranks_acs_first(tmp_path):
    acs = ("$ sudo lspci -vvv | grep ACSCtl\n"
           "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n")
    _, d, _ = _diagnose(tmp_path, WATCHDOG + acs)
    assert [(f["cause"], f["confidence"]) for f in d["findings"]][0] == ("pcie_acs_enabled", "medium")


# -- the sweep: a command line with iommu=pt alone names no ACS fault (runbooks/nccl_log.yaml hang_acs) --
def test_iommu_passthrough_alone_names_no_acs_fault(tmp_path):
    _, d, _ = _diagnose(tmp_path, "node1:1:2 [0] NCCL INFO Using network Socket\n$ cat /proc/cmdline\n"
                                  "BOOT_IMAGE=/vmlinuz root=/dev/sda1 iommu=pt\n")
    assert "pcie_acs_enabled" not in _ranked(d)


# -- the lines a differential step cites against a cause are those its fact was read from -----------
def test_a_step_against_a_cause_cites_its_own_outputs_not_every_host_output(tmp_path):
    text = ("node1:1234:1300 [0] NCCL INFO NET/IB : No device found.\n"
            "node1:1234:1300 [0] NCCL INFO Using network Socket\n"
            "$ nvidia-smi topo -m\n\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV12\tPXB\t0-31\t0\n"
            "GPU1\tNV12\t X \tPXB\t0-31\t0\nNIC0\tPXB\tPXB\t X \t\t\n\nLegend:\n  NIC0: mlx5_0\n"
            "$ cat /proc/cmdline\nBOOT_IMAGE=/vmlinuz root=/dev/sda1 iommu=pt\n")
    _, d, path = _diagnose(tmp_path, text, "--symptom", "slow")
    hidden = next(f for f in d["findings"] if f["cause"] == "container_missing_ib_devices")
    assert hidden["contradicting"][0] == f"{path}:1-2: NCCL could open the RDMA devices -> no"
    assert d["findings"][0]["supporting"][0] == f"{path}:1-2: log.job.scope"


# -- NCCL 2.23+ bootstrap: the out-of-band device, the root's checks, NCCL_COMM_ID, accept -------------
P = "gpu-node-1:4242:4301 [0] "


def test_an_oob_ifname_that_matches_nothing_names_the_bootstrap_interface(tmp_path):
    text = (f"{P}NCCL INFO NCCL_OOB_NET_ENABLE set by environment to 1\n"
            f"{P}bootstrap.cc:528 NCCL WARN no device found matching mlx5_9, verify NCCL_OOB_NET_IFNAME\n")
    _, d, path = _diagnose(tmp_path, text)
    first = d["findings"][0]
    assert first["cause"] == "wrong_socket_ifname"
    assert first["supporting"][0] == (f"{path}:2: bootstrap.cc no device found matching mlx5_9, verify "
                                      "NCCL_OOB_NET_IFNAME")
    assert first["next_step"].startswith("paste the job's NCCL_OOB_NET_IFNAME and NCCL_OOB_NET_ENABLE")


@pytest.mark.parametrize("warn, kind", [
    ("bootstrap.cc:327 NCCL WARN Bootstrap Root : mismatch in info from procs, nranks 16 vs 8, nroots 1 vs 1, "
     "iroot 0 vs 0", "bootstrap_job_mismatch"),
    ("bootstrap.cc:348 NCCL WARN Bootstrap Root : rank 3 of 16 ranks has already checked in", "bootstrap_job_mismatch"),
    ("bootstrap.cc:114 NCCL WARN Invalid NCCL_COMM_ID, please use format: <ipv4>:<port> or [<ipv6>]:<port> or "
     "<hostname>:<port>", "comm_id_invalid"),
    ("misc/socket.cc:449 NCCL WARN socketTryAccept: exceeded error retry count after 35 attempts, Too many open files",
     "accept_failed"),
])
def test_bootstrap_failures_without_a_catalogue_cause_say_what_they_mean(tmp_path, warn, kind):
    rc, d, path = _diagnose(tmp_path, P + warn + "\n")
    assert d["findings"] == [] and d["verdict"] == "inconclusive" and d["healthy"] is None
    reason = next(i["reason"] for i in d["inconclusive"] if i["node"] == "evidence")
    assert reason == f"{path}:1: {signatures.by_kind()[kind].says}; no cause of the catalogue covers it"


# -- ibdev2netdev's (Down): a candidate while the port's own state is not shown --------------------
def test_a_down_netdev_whose_port_is_not_shown_is_a_port_down_candidate(tmp_path):
    _, d, path = _diagnose(tmp_path, "$ ibdev2netdev\nmlx5_3 port 1 ==> net1 (Down)\n")
    first = d["findings"][0]
    assert (first["cause"], first["confidence"]) == ("ib_port_down", "low")
    assert first["supporting"] == [f"{path}:2: mlx5_3 port 1 ==> net1 (Down): no carrier on the port's netdev"]
    assert first["next_step"].startswith("paste `ibstat mlx5_3` (the port's State and Physical state)")


def test_a_down_ipoib_netdev_beside_its_active_port_is_no_port_down(tmp_path):
    # An IPoIB netdev has no carrier until it joins the broadcast group: the port's ACTIVE state decides.
    text = ("CA 'mlx5_3'\n\tCA type: MT4123\n\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n"
            "\t\tPhysical state: LinkUp\n\t\tRate: 200\n\t\tLink layer: InfiniBand\n"
            "$ ibdev2netdev\nmlx5_3 port 1 ==> ib0 (Down)\n")
    _, d, _ = _diagnose(tmp_path, text)
    assert "ib_port_down" not in _ranked(d)


# -- a slow job whose text only names the OFI plugin: no NCCL line shows NCCL running -----------------
def test_a_named_plugin_without_nccl_lines_is_not_read_against_the_plugin(tmp_path):
    text = ("The container's LD_LIBRARY_PATH lacks /opt/amazon/aws-ofi-nccl/lib, so NCCL never loads the plugin.\n"
            "- `/opt/amazon/aws-ofi-nccl/lib` holds libnccl-net.so\n"
            "LD_LIBRARY_PATH=/usr/local/cuda/compat/lib:/usr/local/nvidia/lib\n")
    _, d, _ = _diagnose(tmp_path, text, "--symptom", "slow")
    assert _ranked(d)[0] == "net_plugin_not_loaded" and d["findings"][0]["contradicting"] == []
    assert "socket_fallback" not in _ranked(d)  # no NCCL line, so no "which network did it choose" question


def test_a_slow_job_with_nccl_lines_that_never_name_the_network_still_asks(tmp_path):
    text = (f"{P}NCCL INFO NCCL version 2.21.5+cuda12.4\n"
            f"{P}NCCL INFO comm 0x5581c0 rank 0 nranks 16 cudaDev 0 busId 1a000 commId 0x1 - Init COMPLETE\n")
    _, d, _ = _diagnose(tmp_path, text, "--symptom", "slow")
    assert _ranked(d)[:2] == ["socket_fallback", "gdr_disabled"]


def test_the_plugins_own_info_line_speaks_against_a_plugin_not_loaded(tmp_path):
    text = "The job mounts /opt/amazon/aws-ofi-nccl/lib into the pod.\nNET/OFI Selected Provider is efa (found 4 nics)\n"
    _, d, path = _diagnose(tmp_path, text)
    plugin = next(f for f in d["findings"] if f["cause"] == "net_plugin_not_loaded")
    assert plugin["contradicting"] == [f"{path}:2: NET/OFI Selected Provider is efa (found 4 nics): the OFI plugin's "
                                       "own line, so it loaded"]


def test_a_lone_cable_error_names_the_port_down(tmp_path):
    line = ("[ 3512.334] mlx5_core 0000:17:00.0: port_module:254:(pid 0): Port module event[error]: module 0, "
            "Cable error, Bad or shorted cable/module\n")
    _, d, _ = _diagnose(tmp_path, line)
    assert _ranked(d) == ["ib_port_down"]
    plugged = "[ 3512.334] mlx5_core 0000:17:00.0: port_module:254:(pid 0): Port module event: module 0, Cable plugged\n"
    assert signatures.match(plugged) is None


def test_a_lone_xid_is_decided_by_the_trunk(tmp_path):
    # The trunk's gpu_xid check reads kernel.events.xid alone (no pci.gpus gate): the guard of item 1.
    _, d, _ = _diagnose(tmp_path, "[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n")
    assert d["root_cause"]["id"] == "gpu_xid_errors"
