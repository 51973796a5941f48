"""Property: for any mix of real NCCL lines, the fast path and the line path read the same failures
and the same message-level facts (segmenter.py's docstring says what the fast path summarizes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allreduce_doctor.evidence import bulk as fast_path
from allreduce_doctor.evidence import segmenter
from allreduce_doctor.evidence.nccl import NcclLog
from allreduce_doctor.evidence.nccl_errors import FAIL_HINT_RE
from allreduce_doctor.evidence.nccl_network import network
from allreduce_doctor.evidence.segmenter import Scanner
from tests.evidence.helpers import CASES, REAL

# Every line of the real logs and the shared cases that names NCCL and that the NCCL reader reads, as an
# engineer pasted them: NCCL's own lines, those that quote `NCCL ` again (the version line), and prose
# that names NCCL (a Python error), which bulk.py hands to the line path.
REAL_LINES = sorted({line for path in sorted(REAL.glob("*.txt")) + sorted(CASES.glob("*.txt"))
                     for line in path.read_text(errors="replace").splitlines()
                     if "NCCL " in line and NcclLog().feed_quiet(line, "x:1")})
# INFO failures in the shapes NCCL prints them, and per-rank chatter the fast path skips.
PLANTED = [
    "host-a:1:2 [0] NCCL INFO Call to connect returned Connection refused, retrying",
    "host-b:3:4 [1] NCCL INFO NET/IB : No device found.",
    "host-c:5:6 [2] NCCL INFO Failed to open libibverbs.so[.1]",
    "host-d:7:8 [3] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object file",
    "host-e:9:9 [4] NCCL INFO Cuda failure 'system not yet initialized'",
    "host-f:1:1 [5] NCCL INFO NET/Socket : No socket interface found",
    "host-a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
    "host-b:3:4 [1] NCCL INFO Trees [0] 1/-1/-1->0->-1",
    "host-c:5:6 [2] NCCL INFO comm 0x5d0c0 rank 2 nRanks 8 nNodes 2 localRanks 4 localRank 2 MNNVL 0",
    "host-a:1:2 [0] NCCL INFO NCCL version 2.18.1+cuda12.1",
    # PyTorch's words around NCCL's (c10d ProcessGroupNCCL.cpp, NCCLUtils.hpp), prose to the fast path
    "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1207, unhandled system error, "
    "NCCL version 2.10.3",
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. It can be "
    "also caused by unexpected exit of a remote peer, you can check NCCL warnings for failure reason and see if "
    "there is connection closure by a peer.",
]
HOSTS = ["", "node-1:11:12 [0] ", "node-2:21:22 [3] ", "2026-01-02T03:04:05Z node-3:31:32 [7] "]


def _rehost(line: str, prefix: str) -> str:
    """The same message from another rank: a prefix of another host before `NCCL`."""
    return prefix + line[line.index("NCCL "):] if prefix else line


lines_st = st.lists(st.tuples(st.sampled_from(REAL_LINES + PLANTED), st.sampled_from(HOSTS)), min_size=1, max_size=60)


def _read(path: Path, bulk: bool, find_keys_max: int = fast_path.FIND_KEYS_MAX) -> dict:
    old = segmenter.BULK_MIN, fast_path.FIND_KEYS_MAX
    segmenter.BULK_MIN = 1 if bulk else 10**12  # every all-NCCL block through the fast path, or none
    fast_path.FIND_KEYS_MAX = find_keys_max  # 0: every failure key found by the one scan
    try:
        scanner = Scanner()
        scanner.scan(str(path))
    finally:
        segmenter.BULK_MIN, fast_path.FIND_KEYS_MAX = old
    n = scanner.nccl
    return {
        "lines": n.lines, "errors": n.errors, "warn_other": n.warn_other.to_dict(), "version": n.version,
        "plugin": n.plugin, "env": {k: v for k, (v, _) in n.env.items()}, "gdr": set(n.gdr),
        "channels": set(n.channels), "transports": set(n.transports), "network": network(n),
        # not nranks: the fast path reads the job size from the first communicator line of a block
        "networks": {net for nets in n.networks.values() for net in nets},
        "graphs": n.graphs, "net_bw": n.net_bw, "qp_mtu": set(n.qp_mtu), "trace_files": set(n.trace_files),
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mix=lines_st)
def test_fast_and_line_paths_agree(tmp_path, mix):
    path = tmp_path / "mix.log"
    path.write_text("".join(_rehost(line, prefix) + "\n" for line, prefix in mix))
    fast_few, fast_many, exact = _read(path, True), _read(path, True, find_keys_max=0), _read(path, False)
    if _one_message_from_two_hosts(mix):
        # The fast path reads such a message once, with its first host (the docstring says so), so
        # which network each host uses, and whether the hosts disagree ("mixed"), may differ.
        for read in (fast_few, fast_many, exact):
            del read["network"]
    assert fast_few == exact
    assert fast_many == exact


def _one_message_from_two_hosts(mix) -> bool:
    hosts: dict[str, set] = {}
    for line, prefix in mix:
        text = _rehost(line, prefix)
        hosts.setdefault(text[text.index("NCCL "):], set()).add(text[:text.index("NCCL ")])
    return any(len(prefixes) > 1 for prefixes in hosts.values())


def test_the_mix_holds_info_failures_and_chatter():
    """The property is only worth its name if the pool holds what the fast path might drop."""
    assert len(REAL_LINES) > 100
    assert sum(" NCCL WARN " in line for line in REAL_LINES) >= 10
    assert all(FAIL_HINT_RE.search(line) for line in PLANTED[:6])


@pytest.mark.parametrize("word", fast_path._FAIL_HINTS)
def test_the_hint_words_are_the_line_paths(word):
    """The fast path reads nccl.py's hint pattern as plain words: it must stay a list of words."""
    assert FAIL_HINT_RE.fullmatch(word.decode())


def test_the_named_network_does_not_depend_on_which_hosts_copy_was_read(tmp_path):
    """Found by the property above: the fast path reads `Using network AWS Libfabric` once, from the
    first host, and node-1's own `NET/IB : Using` made the job's network IB on that path only. The
    network ranks name outranks one only implied, whichever host's line was read."""
    path = tmp_path / "mix.log"
    path.write_text("[1,15]<stdout>:bert-mpi-training-worker-1:28:567 [7] NCCL INFO Using network AWS Libfabric\n"
                    "node-1:11:12 [0] NCCL INFO Using network AWS Libfabric\n"
                    "node-1:11:12 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB enp41s0f1:<0>\n")
    fast, line = _read(path, bulk=True), _read(path, bulk=False)
    assert fast == line and line["network"] == "Libfabric"


def test_a_bootstrap_error_trace_is_counted_at_every_occurrence(tmp_path):
    """Found by the property above: nccl.py counts `bootstrap.cc:N -> R` (R != 0) as a failure though it
    holds no hint word, and the fast path read it once, as a message many ranks print."""
    path = tmp_path / "mix.log"
    path.write_text("71d46aa8dab5:5241:5262 [2] NCCL INFO bootstrap.cc:100 -> 2\n" * 2)
    fast, line = _read(path, bulk=True), _read(path, bulk=False)
    assert line["errors"]["bootstrap_failed"]["count"] == 2
    assert fast == line


def test_the_alert_level_scan_reads_each_line_whose_message_is_a_warning(tmp_path):
    """With many failure keys (find_keys_max=0) WARN keys are found by a scan of the alert levels, each
    line once, and a WARN quoted inside an INFO message is read as that INFO line (as the line path does)."""
    warn = "NCCL WARN NET/IB : Got completion from peer 10.0.0.{n}<4000{n}> with error 12, opcode 0, len 0, vendor err 129"
    lines = [f"node-{n}:1:2 [0] " + warn.format(n=n) for n in range(12)]
    lines.append("node-1:1:2 [0] NCCL INFO quoted: " + warn.format(n=3))  # holds an alert key, but is not one
    path = tmp_path / "mix.log"
    path.write_text("\n".join(lines + lines[:5]) + "\n")
    fast, line = _read(path, bulk=True, find_keys_max=0), _read(path, bulk=False)
    assert line["errors"]["retry_exceeded"]["count"] == 17
    assert fast == line
