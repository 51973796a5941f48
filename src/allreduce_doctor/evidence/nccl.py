"""NCCL_DEBUG=INFO lines, read with the grammar of parsers/nccl_log.py (every NCCL version's wording
seen in the wild): what the log says is kept in NcclLog, bounded in size whatever the log's.
"""

from __future__ import annotations

import re
from collections import Counter

from allreduce_doctor.evidence import nccl_errors, signatures
from allreduce_doctor.evidence.lines import Examples, Where
from allreduce_doctor.nccl_rules import plugin_abi
from allreduce_doctor.parsers.nccl_log import (  # noqa: F401 - split: the grammar, re-exported
    BARE_CONN_RE,
    BOOT_NET_RE,
    BOOT_RE,
    CHANNELS_RE,
    COMM_RE,
    CONN_RE,
    ENV_RE,
    GDR_RE,
    HCA_RE,
    IFACE_RE,
    INIT_DONE_RE,
    LIST_RE,
    NETBW_RE,
    NETUSE_RE,
    NETWORK_RE,
    NRANKS_RE,
    NVLS_SUPPORT_RE,
    OLD_IFACE_RE,
    PATTERN_RE,
    QPDBG_RE,
    TRACE_RE,
    VERSION_RE,
    split,
)

MAX_HOSTS = 20000
_BARE_HOST_RE = re.compile(r"\s*([A-Za-z0-9][\w.-]*):\d+:\d+ \[\d+\] ")


def _ifaces(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in IFACE_RE.finditer(text)]


def net_family(token: str) -> tuple[str, bool]:
    """'NET/IB/0/GDRDMA' -> ('NET/IB', True); 'P2P/IPC/read' -> ('P2P', False)."""
    parts = token.split("/")
    if parts[0] == "NET" and len(parts) > 1:
        return f"NET/{parts[1]}", "GDRDMA" in parts[2:]
    return parts[0].split()[0] if parts[0] else token, False


class NcclLog:
    """What the NCCL lines of all evidence files say (bounded in size)."""

    def __init__(self) -> None:
        self.lines = 0
        self.where = Where()
        self.version: str | None = None
        self.host_versions: dict[str, set] = {}  # host -> NCCL versions its prefixed lines printed
        self.hosts: dict[str, set] = {}  # host -> devices seen
        self.networks: dict[str, set] = {}  # host -> 'Using network X'
        self.net_using: dict[str, dict[str, set]] = {}  # host -> {'IB': {hca...}, 'Socket': {iface}}
        self.hca_layers: dict[str, str] = {}  # 'mlx5_0:1' -> 'IB' / 'RoCE'
        self.socket_ifaces: dict[str, list] = {}  # host -> [(iface, address)], distinct, at most 8
        self.bootstrap: dict[str, list] = {}
        self.oob: dict[str, list] = {}
        self.bootstrap_net: dict[str, list] = {}  # host -> ['mlx5_0:1']: the net device its bootstrap runs over
        self.plugin: str | None = None  # 'none' | 'loaded' | 'failed'
        self.net_plugins: set[str] = set()  # 'internal' / 'external': what some process's NET plugin search ended in
        # the plugin's interface versions NCCL did not find, whether its search ended with none, the one it loaded
        self.plugin_abi: dict = {"failed": set(), "unsupported": False, "loaded": None}
        self.env: dict[str, tuple[str, str]] = {}  # NCCL_X -> (value, where)
        self.gdr: Counter[str] = Counter()  # 'enabled' / 'disabled' messages
        self.transports: Counter[str] = Counter()  # 'NET/IB/0/GDRDMA' -> connections
        # host -> {True, False}: whether its NET connection lines carry /GDRDMA; complete only when
        # every NET line named its host (the bulk path and bare quoted lines do not).
        self.host_gdr: dict[str, set] = {}
        self.net_unattributed = False
        self.channels: Counter[int] = Counter()  # coll channels per rank line
        self.ring_channels = 0
        self.nvls_channels: Counter[int] = Counter()  # NVLS channels per rank line (CHANNELS_RE group 2)
        self.nvls_support: set[bool] = set()  # NVLS_SUPPORT_RE: whether some rank had multicast support
        self.nranks = 0
        self.nnodes: int | None = None
        self.local_ranks: int | None = None
        self.graphs: list[dict] = []
        self.net_bw: dict[str, float] = {}
        self.qp_mtu: Counter[int] = Counter()
        self.qp_gid: Counter[int] = Counter()
        self.topo_file = False
        self.vm_hints = Examples(3)
        self.errors: dict[str, dict] = {}
        self.warn_other = Examples(5)
        self.trace_files: Counter[str] = Counter()
        # communicator (commId, or nranks before 2.18) -> host -> where its rank printed Init COMPLETE
        self.init_done: dict[str, dict[str, str]] = {}

    # -- per line ---------------------------------------------------------------------
    def feed(self, text: str, where: str) -> bool:
        """Take one line; False when it is not an NCCL line."""
        if not self.feed_quiet(text, where):
            return False
        self.lines += 1
        self.where.add(where)
        return True

    def feed_quiet(self, text: str, where: str) -> bool:
        """feed() for a line already counted (the bulk path counts whole blocks)."""
        parts = split(text)
        if parts is None:  # a line naming NCCL without its prefix: a version, a library's error
            m = VERSION_RE.search(text)
            if m is not None:
                self._version(m, where)
            signal = self.bare(text, where)
            return m is not None or signal
        host, dev, level, src, msg = parts
        if host is not None:
            self.add_host(host, dev)
        self.message(host, level, src, msg, where)
        return True

    def bare(self, text: str, where: str) -> bool:
        """A line without NCCL's prefix that still carries a signal: a signature (a pasted WARN
        message, a CUDA or rdma-core error, a kernel line) or a quoted connection line."""
        if signatures.match(text) is not None:
            m = _BARE_HOST_RE.match(text)  # NCCL before 2.3 printed `host:pid:tid [dev] file:line WARN`
            self._failure("WARN", "", text.strip(), m.group(1) if m else None, where)
            return True
        m = BARE_CONN_RE.search(text)
        if m is not None:  # NCCL's own channel line, quoted: the NET fields it tells (gdr) rest on it
            self.connection(m.group(1))
            self.where.add(where)
            return True
        return False

    def summary_line(self, msg: str, count: int, where: str) -> None:
        """A message many ranks printed, read once: `Using network X`, `NET/Plugin ...`, channel counts."""
        m = CHANNELS_RE.match(msg)
        if m:
            self.channels[int(m.group(1))] += count
            if m.group(2) is not None:
                self.nvls_channels[int(m.group(2))] += count
            self.where.key("channels", where)
            return
        self._info(None, msg, where)

    def add_host(self, host: str, dev: int | None) -> None:
        if host in self.hosts or len(self.hosts) < MAX_HOSTS:
            devs = self.hosts.setdefault(host, set())
            if len(devs) < 64:
                devs.add(dev)

    def job_size(self, nranks: int, nnodes: int | None, local: int | None) -> None:
        self.nranks = max(self.nranks, nranks)
        if nnodes:
            self.nnodes = max(self.nnodes or 0, nnodes)
            self.local_ranks = max(self.local_ranks or 0, local or 0) or None

    def _version(self, m: re.Match, where: str, host: str | None = None) -> None:
        if host and (host in self.host_versions or len(self.host_versions) < MAX_HOSTS):
            self.host_versions.setdefault(host, set()).add(f"{m.group(1)}.{m.group(2)}.{m.group(3)}")
        if self.version is None:
            self.version = f"{m.group(1)}.{m.group(2)}.{m.group(3)}{m.group(4)}"
            self.where.key("version", where)

    def message(self, host: str | None, level: str, src: str, msg: str, where: str) -> None:
        if msg.startswith(("Channel ", "Ring ")):
            m = CONN_RE.match(msg)
            if m:
                self.connection(m.group(3), host)
                return
            m = LIST_RE.match(msg)
            if m:
                total = int(m.group(2)) if m.group(2) else int(m.group(1)) + 1
                self.ring_channels = max(self.ring_channels, total)
                return
        if msg.startswith("NCCL version") or msg.startswith("version"):
            m = VERSION_RE.search("NCCL " + msg if msg.startswith("version") else msg)
            if m:
                self._version(m, where, host)
                return  # else a message that only begins so (ras.cc `NCCL version mismatch with remote peer`)
        if level in ("WARN", "ABORT", "ERROR") or self._info_failure(msg, src):
            self._failure(level, src, msg, host, where)
            return
        self._info(host, msg, where)

    def _info_failure(self, msg: str, src: str) -> bool:
        if not nccl_errors.FAIL_HINT_RE.search(msg):
            return False
        kind = nccl_errors.classify(f"{src} {msg}")
        return kind is not None and kind.name in nccl_errors.INFO_KINDS

    def _info(self, host: str | None, msg: str, where: str) -> None:
        m = NETWORK_RE.match(msg)
        if m:
            name = m.group(1)
            self.networks.setdefault(host or "?", set()).add(name)
            self.where.key("network", where)
            return
        m = NETUSE_RE.match(msg)
        if m:
            self._net_using(host or "?", m.group(1).strip(), m.group(2), where)
            return
        m = OLD_IFACE_RE.match(msg)
        if m:
            ifaces = _ifaces(m.group(1))
            self.net_using.setdefault(host or "?", {}).setdefault("Socket", set()).update(i for i, _ in ifaces)
            _keep(self.socket_ifaces, host or "?", ifaces)
            return
        m = BOOT_RE.match(msg)
        if m:
            device = BOOT_NET_RE.fullmatch(m.group(1).strip())
            if device:  # the net plugin's device and port, no socket interface (BOOT_NET_RE's source)
                _keep(self.bootstrap_net, host or "?", [device.group(0)])
                self.where.key("bootstrap_net", where)
            else:
                _keep(self.bootstrap, host or "?", _ifaces(m.group(1)))
                self.where.key("bootstrap", where)
            return
        if self._plugin_abi(msg):
            self.where.key("plugin", where)
            return
        if msg.startswith("NET/Plugin"):
            low = msg.lower()
            if "loaded" in low or "using plugin" in low:
                self.plugin = "loaded"
            elif "no plugin" in low or "could not find" in low:
                self.plugin = self.plugin or "none"
            # Only the search's last word says which plugin the process runs (NCCL 2.21 prints `No plugin
            # found (name)` for every name it tries): net.cc `using internal implementation` (2.4-2.12),
            # `Using internal network plugin` (2.19-2.23), plugin_open.cc `Could not find:` (2.27+, printed
            # only when no library opened); `Loaded net plugin` (2.19+).
            if "using internal" in low or "could not find:" in low:
                self.net_plugins.add("internal")
            elif "loaded net plugin" in low:
                self.net_plugins.add("external")
            self.where.key("plugin", where)
            return
        if msg.startswith("Plugin Path :"):  # nccl-rdma-sharp-plugins p2p_plugin.c, from the loaded plugin's init
            self.net_plugins.add("external")
            return
        m = ENV_RE.match(msg)
        if m:
            self.env[m.group(1)] = (m.group(2).strip().strip("'\""), where)
            return
        m = GDR_RE.search(msg)
        if m:
            self.gdr[m.group(1).lower()] += 1
            self.where.key("gdr", where)
            return
        self._counts(host, msg, where)

    def _plugin_abi(self, msg: str) -> bool:
        """NCCL's plugin symbol search (nccl_rules/plugin_abi.py has the lines per tag); False
        for any other line, and for `Loaded net plugin`, which the plugin state reads too."""
        if plugin_abi.UNSUPPORTED_RE.search(msg):
            self.plugin_abi["unsupported"] = True
        elif m := plugin_abi.FAILED_SYMBOL_RE.search(msg):
            self.plugin_abi["failed"].add(int(m.group(1)))
        else:
            if m := plugin_abi.LOADED_RE.search(msg):
                self.plugin_abi["loaded"] = int(m.group(1))
            return False
        return True

    def _counts(self, host: str | None, msg: str, where: str) -> None:
        m = CHANNELS_RE.match(msg)
        if m:
            self.channels[int(m.group(1))] += 1
            if m.group(2) is not None:
                self.nvls_channels[int(m.group(2))] += 1
            self.where.key("channels", where)
            return
        m = NVLS_SUPPORT_RE.match(msg)
        if m:
            self.nvls_support.add(m.group(1) is None)
            self.where.key("nvls", where)
            return
        m = INIT_DONE_RE.search(msg)
        if m and host:
            self.job_size(int(m.group(1)), None, None)
            self.where.key("ranks", where)
            self.init_complete(host, m.group(2) or f"nranks {m.group(1)}", where)
            return
        m = COMM_RE.search(msg)
        if m:
            self.job_size(int(m.group(2)), int(m.group(3)) if m.group(3) else None,
                          int(m.group(4)) if m.group(4) else None)
            self.where.key("ranks", where)
            return
        m = NRANKS_RE.search(msg)
        if m:
            self.nranks = max(self.nranks, int(m.group(1)))
            return
        m = PATTERN_RE.search(msg)
        if m and len(self.graphs) < 16:
            self.graphs.append({"cross_nic": int(m.group(1)), "channels": int(m.group(2)),
                                "bw": float(m.group(3)), "intra": m.group(5), "inter": m.group(6)})
            return
        m = NETBW_RE.search(msg)
        if m:
            self.net_bw[m.group(2)] = float(m.group(1))
            self.where.key("net_bw", where)
            return
        m = QPDBG_RE.search(msg)
        if m:
            self.qp_mtu[int(m.group(1))] += 1
            if m.group(2):
                self.qp_gid[int(m.group(2))] += 1
            self.where.key("qp", where)
            return
        m = TRACE_RE.match(msg)
        if m:
            if m.group(2) != "0":
                self.trace_files[m.group(1).rsplit("/", 1)[-1]] += 1
                if m.group(1).endswith("bootstrap.cc") and nccl_errors.classify(msg) is not None:
                    self._failure("INFO", "", msg, host, where)  # a failure passed up through the bootstrap
            return
        low = msg.lower()
        if "topology file" in low or "topo_file" in low:
            self.topo_file = True
        elif "vmbus" in low or "virtual" in low and "topology" in low:
            self.vm_hints.add(where, msg)

    def init_complete(self, host: str, comm: str, where: str) -> None:
        hosts = self.init_done.get(comm)
        if hosts is None and len(self.init_done) < 64:
            hosts = self.init_done[comm] = {}
        if hosts is not None and len(hosts) < 2:  # two hosts prove it; the first two in line order
            hosts.setdefault(host, where)

    def init_across_hosts(self) -> dict[str, str]:
        """host -> line, for the first communicator whose ranks on two hosts or more completed init: its
        bootstrap's TCP reached every rank across them (the allgather of every rank's peer info)."""
        return next((dict(hosts) for hosts in self.init_done.values() if len(hosts) > 1), {})

    def _net_using(self, host: str, net: str, rest: str, where: str) -> None:
        body, _, oob = rest.partition("; OOB")
        per = self.net_using.setdefault(host, {})
        if net.startswith("Socket"):
            ifaces = _ifaces(body)
            per.setdefault("Socket", set()).update(i for i, _ in ifaces)
            _keep(self.socket_ifaces, host, ifaces)
        else:
            hcas = HCA_RE.findall(body)
            name = net.split()[0]
            per.setdefault(name, set()).update(f"{d}:{p}" for d, p, _ in hcas)
            for dev, port, layer in hcas:
                self.hca_layers[f"{dev}:{port}"] = layer
            if oob:
                _keep(self.oob, host, _ifaces(oob))
        self.where.key(f"net_using:{net.split()[0]}", where)

    def connection(self, via: str, host: str | None = None, count: int = 1) -> None:
        via = via.strip()
        self.transports[via] += count
        family, gdr = net_family(via)
        if family.startswith("NET/") and family != "NET/Socket":
            if host is None or (host not in self.host_gdr and len(self.host_gdr) >= MAX_HOSTS):
                self.net_unattributed = True
            else:
                self.host_gdr.setdefault(host, set()).add(gdr)

    def _failure(self, level: str, src: str, msg: str, host: str | None, where: str) -> None:
        kind = nccl_errors.classify(f"{src} {msg}")
        if kind is None:
            if "nvls" in src.lower():
                kind = nccl_errors.BY_NAME["nvls_failure"]
            elif level != "INFO":
                self.warn_other.add(where, f"{src} {msg}".strip())
                return
            else:
                return
        entry = self.errors.get(kind.name)
        if entry is None:
            entry = self.errors[kind.name] = {"count": 0, "causes": list(kind.causes), "blocking": kind.blocking,
                                              "first": f"{src} {msg}".strip()[:300], "source": where,
                                              "hosts": [], "details": []}
        entry["count"] += 1
        if host and host not in entry["hosts"] and len(entry["hosts"]) < 8:
            entry["hosts"].append(host)
        if len(entry["details"]) < 8:  # read only while there is room: a failed job repeats them thousands of times
            info = nccl_errors.details(msg)
            if info and info not in entry["details"]:
                entry["details"].append(info)


def _keep(table: dict[str, list], host: str, pairs: list) -> None:
    """Distinct (iface, address) pairs per host, at most 8, for at most MAX_HOSTS hosts."""
    if host not in table and len(table) >= MAX_HOSTS:
        return
    have = table.setdefault(host, [])
    for pair in pairs:
        if pair not in have and len(have) < 8:
            have.append(pair)
