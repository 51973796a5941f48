"""Turn what the scanner collected into Observations (one per fact, each with the FILE:LINE
ranges it rests on) and the report of what was recognized."""

from __future__ import annotations

from allreduce_doctor.evidence import checks, host, rdma, tool_facts
from allreduce_doctor.evidence import job_summary as job
from allreduce_doctor.evidence import node_facts as node_facts_of
from allreduce_doctor.evidence.lines import Where
from allreduce_doctor.evidence.nccl_network import host_networks, network
from allreduce_doctor.evidence.segmenter import Scanner
from allreduce_doctor.nccl_rules import plugin_abi
from allreduce_doctor.observations import OK, Observation

# The evidence facts of probes/evidence.yaml, by the recognizer named there.
RECOGNIZERS = {
    "nccl_log": "log.nccl",
    "environment": "log.env",
    "nccl_tests": "log.tests",
    "rdma_tools": "log.rdma",
    "host_tools": "log.host",
    "combined": "log.job",
}


def _obs(fact: str, value, where: str, recognizer: str) -> Observation:
    return Observation(fact, value, OK, where or "no such lines in the evidence", "", f"evidence:{recognizer}")


def _blocks_where(blocks: list[dict], tools: set[str]) -> Where:
    w = Where()
    for b in blocks:
        if b["tool"] in tools:
            w.add_range(b["file"], b["first"], b["last"])
    return w


def _versions(host_versions: dict[str, set]) -> dict[str, list[str]]:
    """NCCL version -> the hosts that printed it. A host that printed two versions is left out:
    its paste holds two runs (before and after an upgrade), not one job."""
    out: dict[str, list[str]] = {}
    for name, versions in sorted(host_versions.items()):
        if len(versions) != 1:
            continue
        hosts = out.setdefault(next(iter(versions)), [])
        if len(hosts) < 8:
            hosts.append(name)
    return out


def nccl_value(scanner: Scanner) -> dict:
    n = scanner.nccl
    per_host = host_networks(n)
    return {
        "lines": n.lines, "version": n.version, "network": network(n),
        "versions": _versions(n.host_versions),
        "host_networks": {h: v for h, (v, _) in sorted(per_host.items())[:32]},
        "hosts": len([h for h in n.hosts if h != "?"]), "host_names": sorted(h for h in n.hosts if h != "?")[:16],
        "nranks": n.nranks or None, "nnodes": n.nnodes, "local_ranks": n.local_ranks,
        "transports": sorted(n.transports)[:32],
        "hcas": {h: hcas for h, per in list(n.net_using.items())[:16]
                 if (hcas := sorted(v for net, s in per.items() if net != "Socket" for v in s))},
        "hca_layers": dict(sorted(n.hca_layers.items())[:32]),
        "socket_ifaces": {h: [f"{i}:{a}" for i, a in v[:4]] for h, v in list(n.socket_ifaces.items())[:16]},
        "bootstrap": {h: [f"{i}:{a}" for i, a in v[:2]] for h, v in list(n.bootstrap.items())[:16]},
        "oob": {h: [f"{i}:{a}" for i, a in v[:2]] for h, v in list(n.oob.items())[:16]},
        "bootstrap_net": dict(list(n.bootstrap_net.items())[:16]),
        "init_across_hosts": n.init_across_hosts(),
        "plugin": n.plugin, "plugin_abi": {**n.plugin_abi, "failed": sorted(n.plugin_abi["failed"], reverse=True)},
        "gdr_messages": dict(n.gdr), "coll_channels": sorted(n.channels)[:16],
        "ring_channels": n.ring_channels or None, "nvls_channels": sorted(n.nvls_channels)[:8],
        "nvls_support": sorted(n.nvls_support), "graphs": n.graphs[:4], "net_bw_gbs": n.net_bw,
        "topo_file": n.topo_file, "errors": n.errors, "other_warnings": n.warn_other.to_dict(),
        "error_traces": dict(n.trace_files.most_common(6)), "sources": dict(n.where.keys),
    }


def build(scanner: Scanner) -> tuple[list[Observation], dict]:
    for name, (value, where) in scanner.nccl.env.items():
        scanner.env.set(name, value, where, from_nccl=True)
    env = scanner.env.values()
    tests = scanner.tests.summary()
    rdma_v = rdma.summarize(scanner.blocks)
    host_v = host.summarize(scanner.blocks, scanner.cmdlines)
    host_v["shm"] = tool_facts.shm(node_facts_of.one_host(scanner.blocks), scanner.env.launch)
    nccl_v = nccl_value(scanner)
    job_v = combine(scanner, env, tests["main"], rdma_v, host_v, nccl_v["network"])
    rdma_tools = {"ibstat", "ibstatus", "rdma_link", "ibv_devinfo", "gid_table", "show_gids", "ibdev2netdev", "ethtool",
                  "ethtool_stats", "mlnx_qos"}
    host_tools = {"lspci", "lspci_tree", "pcie_fragment", "nvidia_smi_topo", "nvidia_smi_nvlink", "nvidia_smi_q", "kernel_log",
                  "cuda_p2p"}
    block_where = _blocks_where(scanner.blocks, rdma_tools)
    host_where = _blocks_where(scanner.blocks, host_tools)
    for _text, where in scanner.cmdlines:
        host_where.add(where)
    parts = {"nccl": scanner.nccl.where, "env": scanner.env.where, "tests": scanner.tests.where, "rdma": block_where,
             **host.field_wheres(scanner.blocks, scanner.cmdlines)}
    job_v["field_sources"] = job.field_sources(parts)
    job_where = Where()
    for w in (scanner.nccl.where, scanner.env.where, scanner.tests.where, block_where, host_where):
        job_where.merge(w)
    obs = [
        _obs("log.nccl", nccl_v, scanner.nccl.where.text(), "nccl_log"),
        _obs("log.env", {"vars": env, "sources": {k: v["source"] for k, v in sorted(scanner.env.vars.items())},
                         "forwarded": sorted(scanner.env.forwarded), "launch": scanner.env.launch,
                         **({"conflicts": scanner.env.conflicts} if scanner.env.conflicts else {})},
             scanner.env.where.text(), "environment"),
        _obs("log.tests", tests, scanner.tests.where.text(), "nccl_tests"),
        _obs("log.rdma", rdma_v, block_where.text(), "rdma_tools"),
        _obs("log.host", host_v, host_where.text(), "host_tools"),
        _obs("log.job", job_v, job_where.text(), "combined"),
    ]
    obs += node_facts(scanner, host_v, env)
    return obs, report(scanner, obs)


def combine(scanner: Scanner, env: dict, run: dict | None, rdma_v: dict, host_v: dict, network: str) -> dict:
    nccl = scanner.nccl
    sc = job.scope(nccl, scanner.env.launch, run)
    fab = job.fabric(nccl, rdma_v, env)
    nic = job.nics(nccl, rdma_v, env, fab)
    gid_v = job.gid(nccl, rdma_v, env, fab)
    mtu_v = job.mtu(nccl)
    used = checks.used_ports(nccl, rdma_v, env)
    single = bool(nic["basis"] == "nccl_log" and nic["per_node"] == 1 and sc["scope"] == "inter"
                  and (sc["ranks_per_node"] or 0) > 1)
    return {
        **sc, "network": network, "fabric": fab, "nics": nic, "single_nic": single,
        "bandwidth": job.bandwidth(run, nic, sc["scope"], env, host_v.get("gpu_models")), "gdr": job.gdr(nccl, env, host_v.get("topology")),
        "gid": gid_v, "mtu": mtu_v,
        "connections": job.connections(nccl, fab, gid_v, mtu_v, env, rdma_v), "bridge_network": job.bridge(nccl),
        "bad_socket_ifaces": checks.socket_ifaces(nccl, network, env, sc["scope"]),
        "channels": checks.channels(nccl, nic, sc["scope"]),
        "hca_problems": checks.hca(nccl, rdma_v, env, fab, used), "ib_devices_hidden": checks.ib_devices_hidden(
            nccl, rdma_v, env, _launch(scanner)), "plugin_missing": checks.plugin_missing(nccl, env),
        # like plugin_missing: "no" when the log shows no failed version search
        "plugin_abi": plugin_abi.from_log(nccl.plugin_abi, network) or {"mismatch": False, "why": ""},
        "p2p_hang": checks.p2p_hang(nccl, run, sc["scope"], env), "errors_by_cause": checks.errors_by_cause(nccl),
        "blocking_errors": sorted(k for k, e in nccl.errors.items() if e["blocking"]),
        "virtual_pcie": tree if (tree := host_v.get("pcie_tree")) and tree["virtual"] else None,
        "kernel_signals": host_v.get("kernel_signals") or {}, "host_sources": host_v.get("field_sources") or {},
        "down_netdevs": rdma.down_netdevs(rdma_v),
        **({"report": words} if (words := scanner.words.summary()) else {}),  # the reporter's own words
    }


def _launch(scanner: Scanner) -> dict:
    """The launch lines' facts, with the container a pod spec describes when no `docker run` line does."""
    spec = tool_facts.container(node_facts_of.one_host(scanner.blocks), scanner.env.launch)
    return dict(scanner.env.launch, container=spec) if spec else scanner.env.launch


def node_facts(scanner: Scanner, host_v: dict, env: dict) -> list[Observation]:
    """The node facts the pasted tool outputs and variables show (evidence/node_facts.py)."""
    dmesg: list = []
    dmesg_where = Where()
    for b in scanner.blocks:
        if b["tool"] == "kernel_log" and b["value"] is not None:
            dmesg += b["value"]
            dmesg_where.add_range(b["file"], b["first"], b["last"])
    sources = {k: v["source"] for k, v in scanner.env.vars.items()}
    obs = node_facts_of.observations(scanner.blocks, env, sources, host_v.get("cmdline"),
                                     (dmesg, dmesg_where.text()) if dmesg else None)
    have = {o.fact for o in obs}
    return obs + [o for o in tool_facts.observations(node_facts_of.one_host(scanner.blocks), scanner.env.launch)
                  if o.fact not in have]


def report(scanner: Scanner, obs: list[Observation]) -> dict:
    totals: dict[str, int] = {}
    for f in scanner.files:
        for kind, _a, _b, n in f.segments:
            totals[kind] = totals.get(kind, 0) + n
    return {
        "files": [f.to_dict() for f in scanner.files],
        "recognized": dict(sorted(totals.items())),
        "facts": {o.fact: o.source for o in obs},
        "tool_outputs": [{"tool": b["tool"], "lines": b["where"], "parsed": b["error"] is None,
                          **({"host": b["host"]} if b.get("host") else {}),
                          **({"error": b["error"]} if b["error"] else {})} for b in scanner.blocks[:100]],
        **_hosts_report(scanner.blocks),
        **({"host_conflicts": conflicts_text(scanner.env.conflicts)} if scanner.env.conflicts else {}),
    }


def conflicts_text(conflicts: dict[str, dict]) -> list[str]:
    """'NCCL_IB_HCA: gpu01 mlx5_0,mlx5_1; gpu02 mlx5_2': each variable two named hosts set differently."""
    return [f"{name}: " + "; ".join(f"{host} {value if value is not None else '(unexpanded)'}" for host, value in hosts.items())
            for name, hosts in sorted(conflicts.items())[:16]]


def _hosts_report(blocks: list[dict]) -> dict:
    """Which host's tool outputs became the node facts, when the paste names several."""
    hosts = node_facts_of.hosts_of(blocks)
    if len(hosts) < 2:
        return {}
    return {"node_facts_host": hosts[0], "hosts_not_read": hosts[1:],
            "hosts_note": f"with a node or bundle read, the node facts are {hosts[0]}'s tool outputs; "
                          f"the paste alone (diagnose --evidence, no --snapshot) diagnoses each host ({', '.join(hosts)})"}
