"""The NCCL_DEBUG log line grammar: the NCCL marker anywhere in a line (so any prefix works: host:pid:tid
[dev], mpirun --tag-output, Slurm task ids, timestamps, log shippers), the message, and the shapes of
the messages NCCL has printed across versions. No verdicts here: evidence/nccl.py reads the meaning.

Connection lines: `Ring 00 : 0 -> 1 via NET/IB/0` (2.3), `Channel 00 : 0[1a000] -> 1[1b000] via
P2P/IPC` (2.4-2.11), `Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA` (2.12+); the line
prefix is NCCL's `%s:%d:%d [%d]` (hostname, pid, tid, cudaDev) of src/debug.cc, v2.4.8-1 to v2.30.7-1.
"""

from __future__ import annotations

import re
from functools import lru_cache

MARK_RE = re.compile(r"NCCL (INFO|WARN|TRACE|ABORT|ERROR)\b:?\s?")
SRC_RE = re.compile(r"[\w./+-]+\.(?:cc|c|h|cu|cpp|cxx|hpp):\d+")
# NCCL's own `NCCL version 2.21.5+cuda12.4` (init.cc), or vLLM's / SGLang's `vLLM is using nccl==2.21.5`
# (vllm/distributed/device_communicators/pynccl.py and sglang python/sglang/srt/distributed/device_communicators/
# pynccl.py log ncclGetVersion() of the library they loaded).
VERSION_RE = re.compile(r"(?:NCCL version:?\s*v?|\bis using nccl==)(\d+)\.(\d+)\.(\d+)([^\s)]*)")
CONN_RE = re.compile(r"^(?:Channel|Ring) \d+(?:/\d+)? ?: ?(\d+)(?:\[\w+\])? -> (\d+)(?:\[\w+\])?.*? via (.+?)\s*$")
LIST_RE = re.compile(r"^(?:Channel|Ring) (\d+)(?:/(\d+))? ?:(?:\s+\d+)+\s*$")
NETWORK_RE = re.compile(r"^Using network (.+?)\s*$")
NETUSE_RE = re.compile(r"^NET/([^:]+?) ?: ?Using (.*)$")
BOOT_RE = re.compile(r"^Bootstrap ?: ?Using (.*)$")
# With NCCL_OOB_NET_ENABLE=1 (2.24+) the bootstrap runs over a device of the net plugin, printed as NAME:PORT
# (bootstrap.cc netGetDevice: `Bootstrap: Using %s:%d`, props.name and props.port, `N/A:-1` without them,
# v2.24.3-1..v2.30.7-1); the socket line always ends in `<port>` (ncclSocketToString).
BOOT_NET_RE = re.compile(r"(?:[\w.+-]+|N/A):-?\d+")
ENV_RE = re.compile(r"^(NCCL_\w+) set (?:by environment )?to (.*?)\.?\s*$")
OLD_IFACE_RE = re.compile(r"^NET ?: ?Using interface (\S+)$")  # NCCL 2.2: one line per socket interface
GDR_RE = re.compile(r"GPU Direct RDMA (Disabled|Enabled)\b(.*)$", re.IGNORECASE)
# init.cc `%d coll channels, %d nvls channels, %d p2p channels, ...` (v2.17.1-1 to v2.19.x; `%d collnet channels`
# after the coll count from v2.20, v2.21.5-1 to v2.27.7-1): group 2 is the NVLS channels, 0 when NCCL did not set
# NVLS up for the communicator (transport/nvls.cc ncclNvlsInit: disabled, two GPUs or fewer, no multicast support).
CHANNELS_RE = re.compile(r"^(\d+) coll channels(?:, \d+ collnet channels)?(?:, (\d+) nvls channels)?")
# transport/nvls.cc ncclNvlsInit, v2.17.1-1 to v2.27.7-1: `NVLS multicast support is %savailable on dev %d`.
NVLS_SUPPORT_RE = re.compile(r"^NVLS multicast support is (not )?available on dev")
COMM_RE = re.compile(r"\brank (\d+) nR[a-z]+ (\d+)(?: nNodes (\d+) localRanks (\d+))?", re.IGNORECASE)
NRANKS_RE = re.compile(r"\bnranks (\d+)", re.IGNORECASE)
# init.cc prints it once a rank's communicator is built, after initTransportsRank's bootstrapAllGather of
# every rank's peer info (v2.4.8-1 `comm %p rank %d nranks %d cudaDev %d nvmlDev %d - Init COMPLETE`;
# busId from 2.7, `commId 0x%llx` from 2.18, `ncclCommInitRank`/`ncclCommSplit` before `comm` from 2.21;
# v2.30.7-1 the same): group 1 nranks, group 2 the communicator's id where printed.
INIT_DONE_RE = re.compile(r"\bcomm \w+ rank \d+ nranks (\d+) .*?(?:commId (0x[0-9a-f]+) )?- Init COMPLETE$")
PATTERN_RE = re.compile(r"Pattern \d+, crossNic (\d+), nChannels (\d+), bw ([\d.]+)/([\d.]+), type (\w+)/(\w+)")
NETBW_RE = re.compile(r"NET\[([\d.]+)\] - NET/(\d+)")
QPDBG_RE = re.compile(r"NET/IB ?: ?Dev \d+ Port \d+ qpn \d+ mtu (\d+)(?:.*?GID (\d+))?")
# NCCLCHECK's error trace, `FILE:LINE -> RESULT` (include/checks.h, 2.4-2.29); 2.30 adds the function
# (`FILE:LINE (FUNC) -> RESULT (strerror)`, INFO_LOC in include/debug.h).
TRACE_RE = re.compile(r"^([\w./-]+\.(?:cc|c|h|cu|cpp)):\d+ (?:\([\w:~]+\) )?-> (\d+)")
IFACE_RE = re.compile(r"(?:\[\d+\])?([\w.@:-]+?):([0-9a-fA-F.:%\w-]*)<\d+>")
HCA_RE = re.compile(r"\[\d+\]([\w.-]+):(\d+)/(\w+)")
# A connection line quoted without its NCCL prefix: `9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA`.
BARE_CONN_RE = re.compile(r"\b\d+(?:\[\w+\])? -> \d+(?:\[\w+\])? (?:\[(?:send|receive)\] )?via (\S+)")
STAMP_RE = re.compile(r"^\d{4}-\d\d-\d\d[T ][\d:.,]+(?:Z|[+-]\d\d:?\d\d)?")


def split(text: str) -> tuple[str | None, int | None, str, str, str] | None:
    """(host, device, level, source file, message) of an NCCL line, else None. The prefix is
    read from its end (`host:pid:tid [dev] file.cc:123`), so anything before it is ignored."""
    m = MARK_RE.search(text)
    if m is None:
        return None
    msg = text[m.end():].strip().strip("_*`").strip()
    host, dev, src = _prefix(text[: m.start()])
    return host, dev, m.group(1), src, msg


_HOST_END_RE = re.compile(r"[\]>|:]")
# 2.30.7+ print the calling function after FILE:LINE (src/debug.cc: `[%d] %s:%d (%s) NCCL WARN %s`).
_FUNC_RE = re.compile(r"(:\d+)\s+\([\w~]+(?:\(\))?\)$")


@lru_cache(maxsize=4096)  # a rank prints every line under one prefix: a failed job's log repeats each thousands of times
def _prefix(head: str) -> tuple[str | None, int | None, str]:
    """(host, device, source file) of the text before an NCCL line's level."""
    head = _FUNC_RE.sub(r"\1", head.rstrip(" _*`"))
    src = ""
    last = head.rsplit(None, 1)[-1] if head else ""
    tail = SRC_RE.search(last)  # a launcher tag may be glued on: `[1,3]<stdout>:transport/nvls.cc:165`
    if tail is not None and tail.end() == len(last):
        src, head = tail.group(0).rsplit(":", 1)[0], head[: -len(tail.group(0))].rstrip()
    if head.endswith("]"):
        open_at = head.rfind("[")
        inner = head[open_at + 1:-1]
        if inner.isdigit():
            parts = head[:open_at].rstrip().rsplit(None, 1)[-1:] or [""]
            fields = STAMP_RE.sub("", parts[0]).rsplit(":", 2)
            if len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit():
                name = _HOST_END_RE.split(fields[0])[-1]
                if name:
                    return name, int(inner), src
    return None, None, src
