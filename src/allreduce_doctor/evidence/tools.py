"""Pasted tool output, recognized block by block: a line that starts a tool's output opens a block,
lines that fit the tool's grammar extend it, anything else closes it. The closed block's text is
read by the project's parser for that tool (allreduce_doctor.parsers), so pasted output and a
node's own output are read the same way.

Fragments (a few `GID[n]` lines of ibv_devinfo, `ACSCtl:` lines grepped out of lspci) are blocks
too; they have no parser of their own and are read by the fact builders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import cast

from allreduce_doctor.parsers.nccl_env import HOST_PROMPT

MAX_BLOCK_LINES = 20000


@dataclass(frozen=True)
class Tool:
    name: str  # the segment kind shown in the report
    parser: str | None  # a parser of allreduce_doctor.parsers, or None for fragments
    start: re.Pattern
    more: re.Pattern  # a line that continues the block (start lines continue it too)
    refuse: str | None = None  # another tool's output that looks like one read here: why it is not read


def _t(name: str, parser: str | None, start: str, more: str, flags: int = 0, refuse: str | None = None) -> Tool:
    return Tool(name, parser, re.compile(start, flags), re.compile(more, flags), refuse)


_IBSTAT_KEYS = (r"CA type|Number of ports|Firmware version|Hardware version|Node GUID|System image GUID|Port \d+"
                r"|State|Physical state|Rate|Base lid|LMC|SM lid|Capability mask|Port GUID|Link layer|Transport")
_DEVINFO_PORT = (r"state|max_mtu|active_mtu|sm_lid|port_lid|port_lmc|link_layer|phys_state|active_width|active_speed"
                 r"|gid_tbl_len|max_msg_sz|port_cap_flags2?|max_vl_num|bad_pkey_cntr|qkey_viol_cntr|sm_sl|pkey_tbl_len"
                 r"|subnet_timeout|init_type_on_reset|port")
_GID_LINE = r"^\s*GID\[\s*\d+\]\s*:"
_PCI_DEV = r"^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\s+\S"
_P2P_MATRIX = r"^\s*(?:(?:Uni|Bi)directional )?P2P=(?:Enabled|Disabled) (?:Bandwidth|Latency)|^\s*\[P2P \(Peer-to-Peer\) GPU"
# A syslog line's host has no colon: a stamped `libfabric:PID:TIME::efa:cq:FUNC():LINE<warn> FUNC: ...`
# line (libfabric src/log.c) is the provider's own log, not a host's syslog. Nor does it open with `[`: a
# log shipper's stamp before PyTorch's `[W socket.cpp:601] ` or `[W1203 10:11:12.123456789 socket.cpp:752] `
# (c10/util/Logging.cpp MessageLogger) is an application's line, not `HOST PROC:`.
_DMESG = (r"^\s*(?:\d+,\d+,\d+,[^;]*;|\[\s*\d+\.\d+\]|\[\w{3} \w{3}\s+\d+ [\d:]+ \d{4}\]"
          r"|\w{3}\s+\d{1,2} \d\d:\d\d:\d\d [^\s:\[][^\s:]* [\w./-]+(?:\[\d+\])?:"
          r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S* [^\s:\[][^\s:]* [\w./-]+(?:\[\d+\])?:)")

PROMPT_HOST = HOST_PROMPT  # a shell prompt that names its host (parsers/nccl_env.py)
PROMPT = r"(?:\[?[\w.-]+@[\w.-]+(?::[^\s$#]*|\s[^\]$#]*)?\]?\s*[$#]\s*|[$#>]\s*)?"
PROMPT_HOST_RE = re.compile(rf"^[\s>`]*{PROMPT_HOST}\S")
_MAD_FIELD = r"^\s*[A-Za-z][A-Za-z0-9_]*:\.+|^\s*#\s*(?:Port|Node|Switch) (?:extended )?(?:info|counters):"
_RDMA_STAT = r"^\s*link\s+[\w.-]+/\d+(?:\s+[a-z][a-z0-9_]*\s+\d+)+\s*$"
_MODULES = r"nvidia\w*|nv_peer_mem|gdrdrv|mlx[45]_\w+|ib_\w+|rdma_\w+|efa|irdma|bnxt_re|amdgpu"
_LSMOD_ROW = r"^\s*[\w-]+\s+\d+\s+(?:\d+|-)(?:\s+\S+)?\s*$"

_K8S_KINDS = (r"Pod|PodTemplate|Deployment|StatefulSet|DaemonSet|ReplicaSet|Job|CronJob|PyTorchJob|MPIJob|TFJob|JobSet"
              r"|LeaderWorkerSet|RayCluster|RayJob|VolcanoJob")
_K8S_START = (rf"^\s*(?:apiVersion:\s*[\w./-]+|kind:\s*(?:{_K8S_KINDS})|host(?:Network|IPC):\s*(?:true|false)"
              r"|(?:securityContext|resources|emptyDir):|(?:rdma|vpc\.amazonaws\.com)/[\w.-]+:\s*[\"']?\d)\s*$")
_K8S_MORE = (r"^(?!.*NCCL_)(?:\s+(?:-\s+)?[\"']?[\w./-]+[\"']?\s*:(?:\s.*)?|\s*-\s+\S.*"
             r"|(?:apiVersion|kind|metadata|spec|status|template):.*)\s*$")

TOOLS: tuple[Tool, ...] = (
    _t("ibstat", "ibstat", r"^\s*CA\s+'[^']+'\s*$", rf"^\s*(?:(?:{_IBSTAT_KEYS})\s*:|CA\s+'[^']+'\s*$|ib(?:panic|warn)\s*:)"),
    _t("ibstatus", "ibstatus", r"^\s*Infiniband device\s+'[^']+'\s+port\s+\d+\s+status\s*:",
       r"^\s*(?:default gid|base lid|sm lid|state|phys state|rate|link_layer)\s*:|^\s*Infiniband device\s+'"),
    # iproute2 `rdma link show`: `link DEV/PORT ... state S physical_state P` (to 5.4: `0/1: DEV/PORT: state ...`).
    _t("rdma_link", "rdma_link", r"^\s*(?:link\s+|\d+/\d+:\s+)[\w.-]+/\d+:?\s+(?:subnet_prefix|state)\b",
       r"^\s*(?:link\s+|\d+/\d+:\s+)[\w.-]+/\d+:?\s+(?:subnet_prefix|state)\b"),
    _t("ibv_devinfo", "ibv_devinfo", r"^\s*hca_id\s*:\s*\S+", r"^\s+\S|^\s*hca_id\s*:"),
    _t("gid_table", None, rf"{_GID_LINE}|^\s*phys_state\s*:\s*\w+\s*\(\d\)",
       rf"{_GID_LINE}|^\s*(?:{_DEVINFO_PORT})\s*:\s*\S"),
    _t("show_gids", "show_gids", r"^\s*DEV\s+PORT\s+INDEX\s+GID\b|^\s*\S+\s+\d+\s+\d+\s+[0-9a-fA-F]{4}:[0-9a-fA-F:]+\s.*\bv[12]\b",
       r"^\s*-{3}|^\s*n_gids_found\s*=|^\s*\S+\s+\d+\s+\d+\s+[0-9a-fA-F]{4}:[0-9a-fA-F:]+"),
    _t("ibdev2netdev", "ibdev2netdev", r"^\s*\S+\s+port\s+\d+\s+==>\s+\S+\s+\((?:Up|Down)\)",
       r"^\s*\S+\s+port\s+\d+\s+==>\s+\S+"),
    _t("ethtool", "ethtool_link", r"^\s*Settings for\s+\S+\s*:\s*$|^\s*Speed:\s*(?:\d+Mb/s|Unknown!)\s*$",
       r"^\s+\S|^\s*(?:Speed|Duplex|Lanes|Link detected|Auto-negotiation|Port)\s*:"),
    _t("ethtool_stats", "ethtool_stats", r"^\s*NIC statistics\s*:\s*$|^\s*(?:rx|tx)_[a-z0-9_]+\s*:\s*\d+\s*$",
       r"^\s*[A-Za-z0-9_.\[\]-]+\s*:\s*-?\d+\s*$"),
    _t("mlnx_qos", "mlnx_qos", r"^\s*(?:DCBX mode|Priority trust state|PFC configuration)\s*:",
       r"^\s*(?:DCBX mode|Priority trust state|PFC configuration|dscp2prio mapping|Cable len|Receive buffer size"
       r"|Buffer size|Shared buffer|tc|priority|prio|enabled|buffer|default|trust|tsa|ratelimit|mtu|ETS)\b"),
    _t("lspci", "lspci_vvv", _PCI_DEV, rf"{_PCI_DEV}|^\s+\S"),
    # lspci -tv: the tree of pciutils ls-tree.c, from its first root bus `-[DDDD:BB]-` or `-+-[DDDD:BB]-`.
    _t("lspci_tree", "lspci_tree", r"^\s*-(?:\+-)?\[[0-9a-fA-F]{4}:[0-9a-fA-F]{2}\]-",
       r"^\s*[|+\\ ]*(?:[+\\]-|--)(?:\[[0-9a-fA-F]{4}:[0-9a-fA-F]{2}\]-|[0-9a-fA-F]{2}\.[0-7])"),
    _t("pcie_fragment", None, r"^\s*(?:ACSCtl|ACSCap|ACSSta|LnkSta|LnkCap|LnkCtl)\s*:",
       r"^\s*(?:ACSCtl|ACSCap|ACSSta|LnkSta2?|LnkCap2?|LnkCtl2?)\s*:"),
    _t("nvidia_smi_topo", "nvidia_smi_topo", r"^\s*GPU0\b.*\bCPU Affinity\b",
       r"^\s*(?:GPU\d+|NIC\d+|mlx5_\d+|[\w-]+)\s+(?:X|SYS|NODE|PHB|PXB|PIX|NV\d+)\b|^\s*Legend\s*:|^\s*[\w#]+\s*=|^\s*NIC\d+\s*:"
       r"|^\s*NIC Legend\s*:"),
    _t("nvidia_smi_nvlink", "nvidia_smi_nvlink", r"^\s*GPU\s+\d+\s*:.*\(UUID:",
       r"^\s*(?:GPU\s+\d+\s*:|Link\s+\d+\s*:|NVML:)"),
    _t("nvidia_smi_q", "nvidia_smi_fabric", r"^=+\s*NVSMI LOG\s*=+\s*$|^\s*Fabric\s*$",
       r"^\s+\S|^(?:Timestamp|Driver Version|CUDA Version|Attached GPUs|GPU [0-9A-Fa-f]{4,8}:)"),
    _t("kernel_log", "dmesg_lines", _DMESG, _DMESG),
    # infiniband-diags MAD dumps (perfquery.c dump_perfcounters, smpquery.c port_info/node_info):
    # a `# ... :` header, then `Name:....value` lines (libibmad dump.c pads with dots).
    _t("perfquery", "perfquery", r"^\s*#\s*Port (?:extended )?counters:|^\s*PortSelect:\.{3,}", _MAD_FIELD),
    _t("smpquery", "mad_fields", r"^\s*#\s*(?:Port|Node|Switch) info:|^\s*[A-Z][A-Za-z0-9_]*:\.{5,}\S", _MAD_FIELD),
    # `grep . /sys/class/infiniband/*/ports/*/counters/*`: GNU grep's FILE:LINE for several files.
    _t("sysfs_dump", "sysfs_dump", r"^\s*/sys/class/(?:infiniband|net)/\S+?:\S", r"^\s*/sys/\S+?:"),
    # iproute2 `dcb pfc show dev IF` (dcb/dcb_pfc.c dcb_pfc_print, man dcb-pfc(8)).
    _t("dcb_pfc", "dcb_pfc", r"^\s*(?:pfc-cap\s+\d+|prio-pfc\s+\d:(?:on|off))\b",
       r"^\s*(?:pfc-cap|macsec-bw|delay|prio-pfc|requests|indications)\s"),
    # iproute2 `rdma statistic show` (rdma/stat.c): `link DEV/PORT NAME VALUE ...`, one line a port.
    _t("rdma_statistic", "rdma_statistic", _RDMA_STAT, _RDMA_STAT),
    # libfabric `fi_info [-p PROV]` (util/info.c): `provider: NAME` then indented fields.
    _t("fi_info", "fi_info", r"^\s*provider:\s*\S+\s*$",
       r"^\s*provider:\s*\S|^\s+(?:fabric|domain|version|type|protocol):\s"),
    # bash `ulimit -l` (the value follows the command) or `ulimit -a`'s max locked memory line.
    _t("ulimit", "ulimit_memlock", rf"^\s*{PROMPT}(?:sudo\s+)?ulimit\s+(?:-[SH]\s*)?-[SH]?l\s*$|^\s*max locked memory\s+\(kbytes, -l\)",
       r"^\s*(?:unlimited|\d+)\s*$|^\s*[a-z][a-z ]+\s+\([^)]*-\w\)\s+\S+\s*$"),
    # coreutils `df [-h]` (header, then one row a filesystem).
    _t("df", "df", r"^\s*Filesystem\s+(?:Size|1K-blocks|1M-blocks)\s+Used\s+Avail",
       r"^\s*\S+\s+\S+\s+\S+\s+\S+\s+(?:\d{1,3}%|-)\s+/\S*\s*$"),
    # rdma-core libibverbs/examples/devices.c.
    _t("ibv_devices", "ibv_devices", r"^\s*device\s+node GUID\s*$", r"^\s*-{6}\s+-{16}\s*$|^\s*[\w.-]+\s+[0-9a-fA-F]{16}\s*$"),
    # kmod lsmod: the header, or a row of a module this tool reads (a `lsmod | grep` excerpt).
    _t("lsmod", "lsmod", rf"^\s*Module\s+Size\s+Used by\s*$|^(?:{_MODULES})\s+\d+\s+(?:\d+|-)\b", _LSMOD_ROW),
    # NCCL_TOPO_DUMP_FILE (NVIDIA/nccl src/graph/xml.cc: one tag a line).
    _t("nccl_topo_xml", "nccl_topo_xml", r"^\s*<system\s+version=", r"^\s*</?(?:system|cpu|pci|gpu|nic|net|nvlink|c2c)\b"),
    # A Kubernetes pod spec or a fragment of one (Pod API: apiVersion/kind, hostNetwork, securityContext,
    # resources with rdma/* or EFA resources, an emptyDir at /dev/shm): read by parsers/containers.py. A line
    # that names an NCCL variable ends the block, so the environment reader takes it (`- name: NCCL_X`).
    _t("k8s_pod", "k8s_pod_spec", _K8S_START, _K8S_MORE),
    # AWS Neuron nccom-test (aws-neuronx-tools; its README in aws-samples/awsome-distributed-training
    # micro-benchmarks/nccom-tests): a `size(B) count(elems) type time...(us) algbw(GB/s) busbw(GB/s)` table with
    # no `#`, closed by `Avg bus bandwidth: 0.2346GB/s` with a unit. nccl-tests prints `# Avg bus bandwidth    : %g`
    # with no unit (NVIDIA/nccl-tests src/common.cu). Neuron collectives are not NCCL: the table is named, not read.
    _t("nccom_test", None, r"^\s*size\(B\)\s+count\(elems\)\s|^\s*Avg bus bandwidth\s*:\s*[0-9.]+\s*GB/s\s*$",
       r"^\s*\d+(?:\s+\d+)*\s+(?:u?int(?:8|16|32|64)|fp(?:8|16|32)|bf16)(?:\s+[0-9.]+)+\s*$"
       r"|^\s*Avg bus bandwidth\s*:\s*[0-9.]+\s*GB/s\s*$",
       refuse="expected nccl-tests output, got AWS Neuron nccom-test (size(B)/count(elems) table, Avg bus bandwidth "
              "in GB/s): Neuron collectives are not NCCL, so this run is not judged; paste all_reduce_perf output"),
    # CUDA samples p2pBandwidthLatencyTest: peer access, then bandwidth and latency matrices per GPU pair.
    _t("cuda_p2p", None, r"^\s*Device=\d+\s+CAN(?:NOT)?\s+Access Peer Device=\d+|^\s*P2P Connectivity Matrix"
       rf"|^\s*Device:\s*\d+,.*pciBusID|{_P2P_MATRIX}",
       r"^\s*Device=\d+\s+CAN|^\s*Device:\s*\d+,.*pciBusID|^\s*(?:D\\D|GPU|CPU)(?:\s+\d+)+\s*$"
       rf"|^\s*\d+(?:\s+\d+(?:\.\d+)?)+\s*$|^\s*P2P Connectivity Matrix|{_P2P_MATRIX}|^\s*\*+NOTE:|^\s*So you can see lesser"),
)
BY_NAME = {t.name: t for t in TOOLS}
# Lines that carry nothing but do not end a block: truncation marks and markdown fences.
NEUTRAL_RE = re.compile(r"^\s*(?:\.{2,}|…+|`{3}\w*|~{3}|-{3,}|={3,}|\d{4}-\d\d-\d\dT[\d:.]+\w*\s*\|?)\s*$")
_CMDLINE_RE = re.compile(r"^\s*(?:GRUB_CMDLINE_LINUX(?:_DEFAULT)?=[\"']?)?(?:BOOT_IMAGE=\S+|\S*\broot=\S+|(?:\S+=\S+\s+)*"
                         r"(?:intel_iommu|amd_iommu|iommu)=\S+)")


def is_cmdline(text: str) -> bool:
    """/proc/cmdline (or GRUB_CMDLINE_LINUX): key=value tokens with root= or BOOT_IMAGE or iommu."""
    if not _CMDLINE_RE.match(text) or len(text) > 4096:
        return False
    tokens = text.replace('"', " ").replace("'", " ").split()
    return sum("=" in t for t in tokens) >= max(1, len(tokens) // 2)


@dataclass
class Block:
    tool: Tool
    first: int
    last: int
    lines: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


_STARTS = re.compile("|".join(f"(?P<{t.name}>{t.start.pattern})" for t in TOOLS))


def starts(text: str) -> Tool | None:
    """The tool whose output this line starts (one combined scan; the first listed wins)."""
    m = _STARTS.match(text)
    return BY_NAME[cast(str, m.lastgroup)] if m else None  # every alternative is a named group
