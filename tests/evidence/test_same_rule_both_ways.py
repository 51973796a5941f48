"""One rule, two sources: a setting read from the node's job and the same setting pasted as text
reach the same runbook step with the same outcome (issue 11: pasted text is one more source of
the node's facts, not a second rule engine).

The node side is a scenario node (tests/scenarios) whose job runs with the setting; the paste side is
`export NAME=VALUE` lines diagnosed as evidence only. For each shared rule the step's outcome must
agree whatever the values (hypothesis draws them, real and virtual interfaces, forced tuning, ...).
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allreduce_doctor.cli import main
from allreduce_doctor.doctor import Doctor
from allreduce_doctor.session import Options, Session
from tests.scenarios import nodes as N
from tests.scenarios.build import fake_host

# The trunk steps that read the job's NCCL variables, and the variables each reads.
IFACES = st.sampled_from(["bond0", "eth0", "ens1f0", "ib0", "docker0", "br-5f3a", "virbr0", "veth12ab", "lo",
                          "cni0", "^docker,lo", "=bond0", "flannel.1", "cali7e3", "lxdbr0"])
SETTINGS = st.fixed_dictionaries({}, optional={
    "NCCL_SOCKET_IFNAME": IFACES,
    "NCCL_IB_DISABLE": st.sampled_from(["0", "1"]),
    "NCCL_P2P_DISABLE": st.sampled_from(["0", "1"]),
    "NCCL_P2P_LEVEL": st.sampled_from(["LOC", "loc", "NVL", "SYS", "0", "5"]),
    "NCCL_MAX_NCHANNELS": st.sampled_from(["1", "2", "8", "16", "32"]),
    "NCCL_PROTO": st.sampled_from(["LL", "LL128", "Simple", "^LL", "^Simple", "LL,LL128,Simple"]),
    "NCCL_BUFFSIZE": st.sampled_from(["65536", "1048576", "4194304", "8388608"]),
    # brief node (MF-6): transport, GPUDirect and IB transport overrides
    "NCCL_NET": st.sampled_from(["Socket", "socket", "IB", "AWS Libfabric"]),
    "NCCL_NET_GDR_LEVEL": st.sampled_from(["LOC", "loc", "0", "PIX", "SYS", "5"]),
    "NCCL_IB_ADAPTIVE_ROUTING": st.sampled_from(["0", "1"]),
    "NCCL_IB_TIMEOUT": st.sampled_from(["10", "14", "18", "20", "22"]),
    "NCCL_IB_RETRY_CNT": st.sampled_from(["3", "7"]),
})
# Steps that read the job's variables: both sources may never give opposite answers.
STEPS = {"trunk.ib_disable_env", "trunk.p2p_env", "trunk.tuning", "trunk.gdr"}
# Of those, the steps the variables alone decide: a fault read from the node is a fault pasted.
# (trunk.tuning also reads how many NICs NCCL uses, which `export` lines do not show.)
BY_VARIABLES_ALONE = {"trunk.ib_disable_env", "trunk.p2p_env"}
# NCCL_SOCKET_IFNAME: the node also knows which interfaces exist; the paste does not, so only
# "virtual or loopback" (knowable from the name) must agree.
SOCKET = "trunk.socket_ifname"


def _node_path(env: dict) -> dict:
    node = N.Node("ib", env={"NCCL_SOCKET_IFNAME": None, **env})
    data = Session(Doctor.load(), fake_host(node), Options(interval=0)).diagnose().to_dict()
    return {p["node"]: p for p in data["path"]}


def _paste_path(tmp_path, env: dict) -> dict:
    path = tmp_path / "paste.txt"
    path.write_text("".join(f"export {k}={v}\n" for k, v in env.items()) or "export NCCL_DEBUG=INFO\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["diagnose", "--evidence", str(path), "--format", "json"])
    return {p["node"]: p for p in json.loads(out.getvalue())["path"]}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(env=SETTINGS)
def test_a_setting_pasted_or_read_decides_the_same_step_the_same_way(tmp_path, env):
    node, paste = _node_path(env), _paste_path(tmp_path, env)
    for step in STEPS:
        # A step the walk did not reach on one side (an earlier fault) says nothing; where both
        # reached it, the node's answer is what the paste must give (or unknown when the paste lacks
        # a fact the step also reads: never the opposite answer).
        if step in node and step in paste:
            assert paste[step]["outcome"] in (node[step]["outcome"], "unknown"), (step, env, node[step], paste[step])
            if node[step]["outcome"] == "yes" and step in BY_VARIABLES_ALONE:
                assert paste[step]["outcome"] == "yes", (step, env)
    spec = env.get("NCCL_SOCKET_IFNAME")
    if spec and SOCKET in node and SOCKET in paste and node[SOCKET]["outcome"] == "yes" \
            and "virtual" in json.dumps(node[SOCKET]["value"]):
        assert paste[SOCKET]["outcome"] == "yes", (env, paste[SOCKET])


def test_a_docker_user_bridge_is_virtual_on_both_sides(tmp_path):
    """The drift the issue found: br-5f3a was a fault pasted and healthy read from the node."""
    env = {"NCCL_SOCKET_IFNAME": "br-5f3a"}
    node, paste = _node_path(env), _paste_path(tmp_path, env)
    assert node[SOCKET]["outcome"] == paste[SOCKET]["outcome"] == "yes"


# --- Every cause a node tree and pasted text can both decide (issue 27 item 2) -------------------------------
# Pasted tool output is one more source of the node's facts (evidence/node_facts.py): the node step is decided
# on the node's observations and on the observations a paste of the same node's tool output gives, and both
# must reach the same outcome. The causes nccl_log.yaml still decides too read what only NCCL's own lines say
# (what it chose and hit at run time), never a node fact a paste could give.

def _doctor():
    from allreduce_doctor.doctor import Doctor as _D

    global _DOCTOR
    if _DOCTOR is None:
        _DOCTOR = _D.load()
    return _DOCTOR


_DOCTOR = None
CMDLINE = "BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=UUID=4f1c ro {} quiet"
# drivers/iommu/intel/dmar.c dmar_fault_do_one()'s line, as a node's dmesg shows it
DMAR_FAULT = ("[ 8120.331402] DMAR: [DMA Read NO_PASID] Request device [1a:00.0] fault addr 0x7f3a2000 "
              "[fault reason 0x06] PTE Read access is not set\n")


def _step(step: str, observations):
    from allreduce_doctor.runbook.walk import decide

    return decide(_doctor().runbooks.node(step), observations, {}).step


def _node_step(node: N.Node, step: str):
    return _step(step, Session(_doctor(), fake_host(node), Options(interval=0)).observe())


def _tool_paste(node: N.Node, tools: tuple[str, ...], extra: str = "") -> str:
    """The node's own tool outputs, each under its `$ argv` line, as an engineer pastes them."""
    host = fake_host(node)
    blocks = []
    for argv, out in sorted(host.commands[0].items()):
        text = out if isinstance(out, str) else out[1]
        if argv[0] in tools and text:
            blocks.append("$ " + " ".join(argv) + "\n" + text)
    return "\n".join(blocks) + "\n" + extra


def _paste_step(tmp_path, text: str, step: str):
    from allreduce_doctor.evidence import load_evidence
    from allreduce_doctor.hosts.empty import EmptyHost

    path = tmp_path / "paste.txt"
    path.write_text(text)
    result = load_evidence([str(path)])
    options = Options(evidence=result.observations, evidence_report=result.report, interval=0)
    return _step(step, Session(_doctor(), EmptyHost(), options).observe())


# cause -> (the node step that decides it, scenarios whose tool outputs show it or show it healthy, what is pasted)
BOTH_WAYS = {
    "pcie_acs_enabled": ("trunk.acs", ("ib-acs-redirect", "acs-directtrans-no-ats", "acs-directtrans-ats",
                                       "acs-redirect-idle-bridge", "acs-root-port-iommu-pt", "ib-healthy"), ("lspci",)),
    "pcie_link_degraded": ("trunk.pcie_nic", ("ib-pcie-x8", "ib-healthy"), ("lspci",)),
    "link_errors": ("trunk.link_flaps", ("dmesg-link-flap", "dmesg-boot-link-up"), ("dmesg",)),
    "fabric_manager_not_ready": ("trunk.fabric_manager", ("fabric-manager-not-ready", "ib-healthy"), ("nvidia-smi", "lspci")),
    "mtu_mismatch": ("ib.mtu", ("ib-mtu-2048", "ib-healthy"), ("ibstat", "ibv_devinfo")),
    "vm_topology_hidden": ("trunk.vm_topology", ("ib-healthy",), ("nvidia-smi",)),
    "iommu_enabled": ("trunk.iommu", (), ()),  # the property test below
    # the job's NCCL variables pasted as `export` lines: the property test at the top of this file
    "gdr_disabled": ("trunk.gdr", (), ()),
    "wrong_socket_ifname": ("trunk.socket_ifname", (), ()),
}
# Causes nccl_log.yaml decides from NCCL's own lines, which no node fact holds; the node decides them from facts
# no tool output shows (the job's /proc/PID/root, maps and /dev/infiniband, or the absence of RDMA ports).
FROM_NCCL_LINES_ONLY = {
    "container_missing_ib_devices": "`NET/IB : No device found`, ibv_reg_mr refused for memlock",
    "container_missing_libibverbs": "`Failed to open libibverbs.so`",
    "efa_ofi_misconfigured": "NET/OFI warnings of aws-ofi-nccl",
    "net_plugin_not_loaded": "NET/Plugin lines: the plugin NCCL_NET names not loaded",
    "net_plugin_version_mismatch": "`Failed to find ncclNetPlugin_vN symbol` lines",
    "socket_fallback": "`Using network Socket`: what NCCL chose, not that the node lacks RDMA ports",
    "wrong_ib_hca": "`NET/IB : Using` ports NCCL took, against the fabric it runs on",
    "wrong_gid_index": "ibv_modify_qp failures and completion errors of the connections NCCL made",
}


def _causes(runbook: str) -> set[str]:
    rb = _doctor().runbooks.runbooks[runbook]
    return {n.cause for n in rb.nodes.values() if getattr(n, "cause", None)}


def test_every_cause_both_sides_decide_is_covered():
    node = set().union(*(_causes(r) for r in ("trunk", "ib", "roce", "plugin")))
    both = _causes("nccl_log") & node
    assert both <= set(BOTH_WAYS) | set(FROM_NCCL_LINES_ONLY), sorted(both - set(BOTH_WAYS) - set(FROM_NCCL_LINES_ONLY))
    assert not set(BOTH_WAYS) & set(FROM_NCCL_LINES_ONLY)


def test_nccl_log_holds_no_twin_of_a_node_step():
    """A step with the title of a trunk, IB or RoCE step judges what the node step judges: it lives there once."""
    from allreduce_doctor.runbook.model import Check

    rs = _doctor().runbooks
    titles = {n.title for r in ("trunk", "ib", "roce") for n in rs.runbooks[r].nodes.values() if isinstance(n, Check)}
    twins = sorted(k for k, n in rs.runbooks["nccl_log"].nodes.items() if isinstance(n, Check) and n.title in titles)
    assert twins == []


@pytest.mark.parametrize("cause,name", [(c, s) for c, (_, names, _t) in BOTH_WAYS.items() for s in names])
def test_a_pasted_tool_output_decides_the_node_step_as_the_node(cause, name, tmp_path):
    from tests.scenarios.build import SCENARIOS

    step, _, tools = BOTH_WAYS[cause]
    node = SCENARIOS[name]
    read, pasted = _node_step(node, step), _paste_step(tmp_path, _tool_paste(node, tools), step)
    assert pasted.outcome == read.outcome != "unknown", (read, pasted)


ACS = st.fixed_dictionaries({"acs_redirect": st.booleans(), "acs_direct_trans": st.booleans(),
                             "nic_ats": st.sampled_from([None, True, False]), "acs_idle_bridge": st.booleans(),
                             "root_port_acs": st.booleans()})


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flags=ACS)
def test_a_pasted_lspci_decides_acs_as_the_node(tmp_path, flags):
    node = N.Node("ib", **flags)
    read, pasted = _node_step(node, "trunk.acs"), _paste_step(tmp_path, _tool_paste(node, ("lspci",)), "trunk.acs")
    assert (pasted.outcome, pasted.value) == (read.outcome, read.value), flags


# the command line's IOMMU mode when no fault is logged: none named stays unknown (the x86 build default translates)
IOMMU_BY_CMDLINE = {"": "unknown", "iommu=pt": "no", "intel_iommu=on": "yes", "intel_iommu=on iommu=pt": "no",
                    "amd_iommu=on": "yes", "iommu=off": "no"}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mode=st.sampled_from(["", "iommu=pt", "intel_iommu=on", "intel_iommu=on iommu=pt", "amd_iommu=on", "iommu=off"]),
       fault=st.booleans())
def test_a_pasted_kernel_log_and_cmdline_decide_the_iommu_as_the_node(tmp_path, mode, fault):
    """No iommu_group type readable (a paste never shows one): the kernel log's IOMMU faults, then the command
    line, decide on both sides (probes/derive_job.py iommu_mode)."""
    cmdline = CMDLINE.format(mode)
    node = N.Node("ib", iommu_type=None, cmdline=cmdline, dmesg=DMAR_FAULT if fault else "")
    read = _node_step(node, "trunk.iommu")
    pasted = _paste_step(tmp_path, _tool_paste(node, ("dmesg",), f"$ cat /proc/cmdline\n{cmdline}\n"), "trunk.iommu")
    expected = "yes" if fault else IOMMU_BY_CMDLINE[mode]
    assert (read.outcome, pasted.outcome) == (expected, expected), (mode, fault, read, pasted)


VM = ("QEMU", "Standard PC (Q35 + ICH9, 2009)")


@pytest.mark.parametrize("dmi,numa,flat,outcome", [
    (VM, "0-1", True, "yes"),          # a VM shows every GPU on several NUMA nodes: the paste knows it is one
    (N.Node.dmi, "0", False, "no"),    # bare metal: real paths
    (VM, "0-1", False, "no"),          # a VM that passes the real PCIe paths through
])
def test_a_pasted_topology_decides_the_vm_view_as_the_node(tmp_path, dmi, numa, flat, outcome):
    from tests.scenarios import tools as T

    topo = T._topo(8, 8, (lambda g, n: "PHB") if flat else (lambda g, n: "PIX" if g == n else "NODE"),
                   lambda g: ("0-95", numa))
    node = N.Node("ib", dmi=dmi, topo=topo)
    read = _node_step(node, "trunk.vm_topology")
    pasted = _paste_step(tmp_path, f"$ nvidia-smi topo -m\n{topo}", "trunk.vm_topology")
    assert (read.outcome, pasted.outcome) == (outcome, outcome)


def test_a_vm_without_nics_in_its_topology_is_flattened_on_both_sides(tmp_path):
    """case-019's shape: GPUs only, every GPU-GPU path PHB, each GPU on both NUMA nodes."""
    names = [f"GPU{g}" for g in range(8)]
    rows = ["\t" + "\t".join(names + ["CPU Affinity", "NUMA Affinity"])]
    rows += ["\t".join([a, *(" X " if a == b else "PHB" for b in names), "0-191", "0-1"]) for a in names]
    topo = "\n".join(rows) + "\n"
    node = N.Node("ib", dmi=VM, topo=topo)
    read = _node_step(node, "trunk.vm_topology")
    pasted = _paste_step(tmp_path, f"$ nvidia-smi topo -m\n{topo}", "trunk.vm_topology")
    assert (read.outcome, read.value, pasted.outcome, pasted.value) == (
        "yes", {"gpu.nic_paths.all_phb": True, "gpu.nic_paths.virtual": True}) * 2
