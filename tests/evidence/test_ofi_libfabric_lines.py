"""aws-ofi-nccl and libfabric (EFA) failure lines (issue 12, dev7): each row's examples through the reader
in the shapes the versions print (NCCL's `host:pid:tid [dev]` prefix or none, libfabric's own
`libfabric:PID:TIME::efa:SUBSYS:FUNC():LINE<level>` prefix or none, an mpirun tag), with the kind and
the candidates in order; then whole pastes through `diagnose --evidence FILE --format json`."""

from __future__ import annotations

import re

import pytest

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_json, load_text

# kind -> its candidate causes, most likely first (signatures/candidates.yaml, dev7 block).
UNREACHABLE = ["socket_blocked", "fabric_unreachable"]
CANDIDATES = {
    "efa_remote_unreachable": UNREACHABLE,
    "efa_no_response": UNREACHABLE,
    "efa_peer_unresponsive": [],  # peer process gone or its host failed: no catalogue cause says so
    "ofi_gdr_required": ["efa_ofi_misconfigured"],
    "efa_env_setting": ["efa_ofi_misconfigured"],
    "efa_rx_post_failed": ["container_missing_ib_devices"],
    "efa_mr_enomem": ["container_missing_ib_devices"],
    "efa_fork_unsafe": ["efa_ofi_misconfigured"],
    "ofi_provider_tcp": ["container_missing_ib_devices", "efa_ofi_misconfigured"],
    "ofi_host_mr_enomem": ["container_missing_ib_devices"],
}
NOT_BLOCKING = {"ofi_provider_tcp"}  # the job runs, over TCP
ROWS = {row.kind: row for row in signatures.signatures() if row.kind in CANDIDATES}
EXAMPLES = [(kind, line) for kind, row in ROWS.items() for line in row.examples]
LIBFABRIC_PREFIX = re.compile(r"^libfabric:\d+:\d+:[^:]*:efa:\w+:\w+\(\):\d+<\w+> ")
# aws-ofi-nccl's `FUNC:LINE NCCL WARN ` before NET/OFI: __PRETTY_FUNCTION__, a C++ signature from the .cpp sources.
NCCL_WARN = re.compile(r"^(?:\w+|[^:]*::\w+\([^)]*\)):\d+ NCCL WARN ")


def _shapes(line: str) -> list[str]:
    """The line as the versions print it and as it is pasted: bare message, under its prefix, mpirun-tagged."""
    if LIBFABRIC_PREFIX.match(line):
        message = LIBFABRIC_PREFIX.sub("", line)
        return [line, message, f"[1,13]<stderr>:{line}", f"2025-05-10T23:09:41Z {line}"]
    if NCCL_WARN.match(line):
        message = NCCL_WARN.sub("", line)
        return [line, message, f"ip-10-0-1-23:35:89 [5] {line}", f"[1,13]<stdout>:ip-10-0-1-23:35:89 [5] {line}"]
    return [line, f"> {line}", f"[1,13]<stderr>:{line}"]


def _errors(tmp_path, text: str) -> dict:
    return {o.fact: o.value for o in load_text(tmp_path, text + "\n").observations}["log.nccl"]["errors"]


def test_every_dev7_kind_is_a_row_with_its_sources():
    assert set(ROWS) == set(CANDIDATES)
    table = signatures.candidates()
    for kind, causes in CANDIDATES.items():
        assert [c.cause for c in table.get(kind, ())] == causes, kind
        assert ROWS[kind].blocking is (kind not in NOT_BLOCKING) and len(ROWS[kind].source["versions"]) >= 3, kind


@pytest.mark.parametrize("kind,line", EXAMPLES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(EXAMPLES)])
def test_each_example_in_each_shape_is_its_kind_with_its_candidates(tmp_path, kind, line):
    for text in _shapes(line):
        errors = _errors(tmp_path, text)
        assert list(errors) == [kind], text
        assert errors[kind]["causes"] == CANDIDATES[kind], text
        assert errors[kind]["blocking"] is (kind not in NOT_BLOCKING), text


def test_the_completion_errors_are_read_before_the_generic_ofi_error_row():
    # Both rows read `NET/OFI ... completed with error`; the status decides, so these come first.
    order = [row.kind for row in signatures.signatures()]
    for kind in ("efa_remote_unreachable", "efa_no_response", "efa_peer_unresponsive", "ofi_gdr_required",
                 "ofi_provider_tcp", "ofi_host_mr_enomem"):
        assert order.index(kind) < order.index("ofi_no_device") < order.index("ofi_error"), kind


@pytest.mark.parametrize("line,kind", [
    # 2.x: 13 is a peer that had answered; 4124 / 4126 likewise say the peer went away.
    ("Unresponsive receiver (connection previously established)", "efa_peer_unresponsive"),
    ("strerror: Unresponsive receiver (reachable by EFA device but handshake failed)", "efa_peer_unresponsive"),
    # Another status or errno is not the unreachable peer, nor the memlock limit.
    ("NET/OFI Request 0x7f00 completed with error. RC: 200. Error: unknown error.", "ofi_error"),
    ("NET/OFI Request 0x7f00 completed with error. RC: 5. Error: 10 (Receiver not ready).", "ofi_error"),
    ("rxr_cq_write_tx_error: err: 5, prov_err: Receiver not ready (10)", None),
    ("libfabric:7:1:efa:mr:efa_mr_reg_impl():481<warn> Unable to register MR: Invalid argument", None),
    ("EFA internal error: (4105) Out of memory", "out_of_memory"),  # the existing row, not 4112's
    # GPU memory (type 2) is not pinned against memlock: the generic registration failure.
    ("NET/OFI Unable to register memory (type = 2) for device 0. RC: -12, Error: Cannot allocate memory",
     "ofi_mr_failed"),
])
def test_neighbouring_wordings_are_not_these_kinds(line, kind):
    found = signatures.match(line)
    assert (found.kind if found else None) == kind


def test_a_host_syslog_line_is_still_a_kernel_log_and_a_stamped_libfabric_line_is_not(tmp_path):
    syslog = "2025-05-10T23:09:41Z gpu-node-7 kernel: mlx5_core 0000:17:00.0: mlx5_cmd_out_err:838: DESTROY_QP failed"
    assert load_text(tmp_path, syslog + "\n").report["files"][0]["segments"][0]["kind"] == "kernel_log"
    stamped = ("2025-05-10T23:09:41Z libfabric:35:1668017255::efa:cq:rxr_cq_write_tx_error():243<warn> "
               "rxr_cq_write_tx_error: err: 20, prov_err: Not a directory (20)")
    assert load_text(tmp_path, stamped + "\n").report["files"][0]["segments"][0]["kind"] == "signature"


# -- whole pastes through the CLI ------------------------------------------------------------------
def _ranked(d: dict) -> list[tuple[str, str]]:
    return [(f["cause"], f["confidence"]) for f in d["findings"]]


def _kinds(d: dict) -> dict:
    return next(e["observed"] for e in d["evidence"] if e["fact"] == "log.nccl.errors")


SECURITY_GROUP_STEP = ("paste the security group rules of both instances (`aws ec2 describe-security-groups "
                       "--group-ids SG`): EFA needs a group that allows all inbound and outbound traffic to and "
                       "from itself")
# aws-ofi-nccl 1.x's plugin with libfabric <= 1.15 under mpirun (the shape of aws/aws-ofi-nccl#156).
OLD_EFA = (
    "Running nccl tests on two p4d instances fails:\n"
    "`[1,13]<stdout>:nccl-tests-worker-1:35:89 [5] ofi_process_cq:1039 NCCL WARN NET/OFI Request 0x7fbb944701b8 "
    "completed with error. RC: 20. Error: unknown error. Completed length: 0, Request: { buffer_index: 255, dev: 1, "
    "size: 0, state: CREATED, direction: SEND }\n"
    "[1,13]<stderr>:libfabric:35:1668017255::efa:cq:rxr_cq_write_tx_error():243<warn> rxr_cq_write_tx_error: "
    "err: 20, prov_err: Not a directory (20)`\n"
)


def test_libfabric_1_x_err_20_ranks_the_security_group_first(tmp_path):
    rc, d, path = diagnose_json(tmp_path, OLD_EFA)
    assert rc == 3 and d["verdict"] == "inconclusive" and d["healthy"] is None
    # medium since dev8: NCCL's TCP step, which never reads EFA's lines, no longer speaks against it
    assert _ranked(d) == [("socket_blocked", "medium"), ("fabric_unreachable", "low")]
    assert d["root_cause"]["id"] == "socket_blocked"
    assert _kinds(d)["efa_no_response"]["count"] == 2
    first = d["findings"][0]
    assert first["supporting"] == [f"{path}:2: NET/OFI Request 0x7fbb944701b8 completed with error. RC: 20. Error: "
                                   "unknown error. Completed length: 0, Request: { buffer_index: 255, dev: 1, size: 0, "
                                   "state: CREATED, direction: SEND }"]
    assert first["next_step"] == SECURITY_GROUP_STEP
    assert d["findings"][1]["next_step"] == ("paste the subnet and placement group of both instances, and run "
                                             "`fi_pingpong -p efa` between them")


# aws-ofi-nccl 1.21's own reading of FI_EHOSTUNREACH (src/platform-aws.cpp), with libfabric 2.x's status 15.
BANNER = (
    "ip-172-31-10-5:812:990 [3] virtual void PlatformAWS::log_cq_error(void*, fid_cq*, fi_cq_err_entry*, const char*):1047 "
    "NCCL WARN NET/OFI Request 0x7f2c1c0a5e00 (send) completed "
    "with error: err: 113, flags: 0, prov_errno: 15, strerror: Unreachable remote - never received a response My EFA "
    "addr: fe80::8ff:c1ff:fe2b:4a1d My host id: i-0a1b2c3d4e5f60718 Peer EFA addr: fe80::84c:7ff:fe3e:91b3 Peer host "
    "id: i-0f1e2d3c4b5a69788, len: 0\n\n"
    "**********************************************************************\n"
    "* This error indicates that the security group on either this instance or the peer instance\n"
    "* is not setup correctly.  For more information, please see the AWS documentation at\n"
    "* https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-start-nccl.html#nccl-start-base-setup\n"
    "**********************************************************************\n"
)


def test_the_plugins_security_group_banner_ranks_the_security_group_first(tmp_path):
    rc, d, _ = diagnose_json(tmp_path, BANNER)
    assert rc == 3 and [c for c, _ in _ranked(d)] == UNREACHABLE
    assert _kinds(d)["efa_remote_unreachable"]["count"] == 2  # the WARN and the banner's own line
    assert d["findings"][0]["next_step"] == SECURITY_GROUP_STEP


def test_a_peer_that_stopped_answering_names_no_cause(tmp_path):
    text = ("libfabric:4410:1733112233::efa:cq:efa_rdm_txe_handle_error():610<warn> err: 103, message: Unresponsive "
            "remote (was previously responsive) My EFA addr: fe80::1 My host id: i-0123456789abcdef0 Peer EFA addr: "
            "fe80::2 Peer host id: i-0fedcba9876543210 (13)\n")
    rc, d, _ = diagnose_json(tmp_path, text)
    assert rc == 3 and d["verdict"] == "inconclusive" and d["root_cause"] is None and d["findings"] == []
    assert list(_kinds(d)) == ["efa_peer_unresponsive"]


def test_efas_abort_banner_for_its_receive_buffers_asks_for_the_memlock_limit(tmp_path):
    text = ("Libfabric EFA provider has encountered an internal error:\n\nLibfabric error: (-12) Cannot allocate "
            "memory\nEFA internal error: (4112) Failure to post internal receive buffers\n\n"
            "Your application will now abort().\n")
    rc, d, path = diagnose_json(tmp_path, text)
    assert rc == 3 and _ranked(d) == [("container_missing_ib_devices", "medium")]
    assert d["findings"][0]["supporting"] == [f"{path}:4: EFA internal error: (4112) Failure to post internal "
                                              "receive buffers"]
    assert d["findings"][0]["next_step"].startswith("paste `ulimit -l` where the ranks run")


@pytest.mark.parametrize("text", [
    "ip-10-1-2-3:4021:4090 [0] platform_config_endpoint:626 NCCL WARN NET/OFI GDR disabled on GDR-supported "
    "instance type p4d.24xlarge\n",
    "FI_EFA_USE_DEVICE_RDMA=1 was set by user, but EFA device has no rdma-read capability.  Application will abort().\n",
], ids=["gdr_required", "env_setting"])
def test_a_provider_that_does_not_fit_the_instance_is_decided_by_the_walk(tmp_path, text):
    rc, d, _ = diagnose_json(tmp_path, text)
    assert rc == 1 and d["verdict"] == "fault"
    assert d["root_cause"]["id"] == "efa_ofi_misconfigured" and d["root_cause"]["confidence"] == "high"
    step = next(p for p in d["path"] if p["node"] == "nccl_log.efa")
    assert step["outcome"] == "yes"


def test_efas_fork_banner_asks_for_the_fork_setting(tmp_path):
    # libfabric prov/efa/src/efa_fork_support.c, as printed on stderr (v1.18.0-v2.6.0).
    text = ("A process has executed an operation involving a call\nto the fork() system call to create a child "
            "process.\n\nAs a result, the Libfabric EFA provider is operating in\na condition that could result in "
            "memory corruption or\nother system errors.\n\nFor the Libfabric EFA provider to work safely when fork()\n"
            "is called please do one of the following:\n1) Set the environment variable:\n          FI_EFA_FORK_SAFE=1\n"
            "and verify you are using rdma-core v31.1 or later.\n\nOR\n2) Use Linux Kernel 5.13+ with rdma-core v35.0+\n"
            "\nYour job will now abort.\n")
    rc, d, path = diagnose_json(tmp_path, text)
    # The banner's "other system errors." also reads as the system_error row (a bare `system error`), whose
    # candidates follow at low; the fork kind leads.
    assert rc == 3 and _ranked(d)[0] == ("efa_ofi_misconfigured", "medium")
    assert _kinds(d)["efa_fork_unsafe"]["count"] == 3
    assert d["findings"][0]["supporting"][0] == f"{path}:1: A process has executed an operation involving a call"


TCP_PROVIDER = ("ip-10-0-0-1:79:79 [0] NCCL INFO NET/OFI Using aws-ofi-nccl 1.7.4-aws\n"
                "ip-10-0-0-1:79:79 [0] NCCL INFO NET/OFI Selected Provider is tcp;ofi_rxm (found 1 nics)\n"
                "ip-10-0-0-1:79:79 [0] NCCL INFO Using network AWS Libfabric\n")


def test_the_plugin_on_a_tcp_provider_at_info_asks_whether_efa_is_visible(tmp_path):
    rc, d, path = diagnose_json(tmp_path, TCP_PROVIDER, "--symptom", "slow")
    assert rc == 3 and _ranked(d) == [("container_missing_ib_devices", "low"), ("efa_ofi_misconfigured", "low")]
    assert d["findings"][0]["supporting"] == [f"{path}:2: NET/OFI Selected Provider is tcp;ofi_rxm (found 1 nics)"]
    assert _kinds(d)["ofi_provider_tcp"]["blocking"] is False


@pytest.mark.parametrize("line", ["NET/OFI Selected Provider is efa (found 4 nics)",
                                  "NET/OFI Selected provider is cxi, fabric is cxi (found 4 nics)",
                                  "NET/OFI Selected provider is verbs;ofi_rxm, fabric is IB-0xfe80 (found 2 nics)"])
def test_a_fabric_provider_is_not_the_tcp_fallback(line):
    assert signatures.match(line).kind != "ofi_provider_tcp"


def test_the_bulk_path_reads_the_tcp_provider_line_as_the_line_path_does(tmp_path):
    from tests.evidence.test_fast_path_property import _read

    path = tmp_path / "ranks.log"
    path.write_text(TCP_PROVIDER * 40)
    fast, line = _read(path, bulk=True), _read(path, bulk=False)
    assert line["errors"]["ofi_provider_tcp"]["count"] == 40
    assert fast == line


@pytest.mark.parametrize("text", [
    "ip-10-0-0-1:79:90 [0] register_mr_buffers:610 NCCL WARN NET/OFI Unable to register memory (type = 1) for "
    "device 0. RC: -12, Error: Cannot allocate memory\n",
    "libfabric:7120:1716822307::efa:mr:efa_mr_reg_impl():855<warn> Unable to register MR of 2097152 bytes: Cannot "
    "allocate memory, ibv pd: 0x55d0c8a0f2a0, total mr reg size 8388608, mr reg count 4\n",
], ids=["plugin_host_buffer", "libfabric_mr"])
def test_a_registration_past_the_memlock_limit_is_decided_by_the_walk(tmp_path, text):
    rc, d, _ = diagnose_json(tmp_path, text)
    assert rc == 1 and d["root_cause"]["id"] == "container_missing_ib_devices"
    assert d["root_cause"]["confidence"] == "high"
    assert next(p for p in d["path"] if p["node"] == "nccl_log.memlock")["outcome"] == "yes"
