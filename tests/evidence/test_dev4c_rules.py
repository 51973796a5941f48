"""Rules from batch 4's dev misses (issue 12, dev4c: a down port, a bootstrap error trace, a GPU-sharing
layer or the OFI plugin named in prose, a VM's PCI tree) and the NCCL 2.23-2.30 lines of the same families,
each from a primary source, through `diagnose --evidence FILE --format json` in process (the CLI's main)."""

from __future__ import annotations

import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.evidence import signatures
from allreduce_doctor.parsers import parse
from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import facts


def _ranked(d: dict) -> list[str]:
    return [f["cause"] for f in d["findings"]]


def _errors(d: dict) -> dict:
    return next(e["observed"] for e in d["evidence"] if e["fact"] == "log.nccl.errors")


# -- a port that is not ACTIVE, when the text does not say which ports are the rails ----------------
def _ibstat_ca(name: str, state: str, phys: str, rate: int) -> str:
    # infiniband-diags ibstat, one CA with one RoCE port (the tabs pasted as spaces).
    return (f"CA '{name}'\n\tCA type: MT4125\n\tNumber of ports: 1\n\tFirmware version: 22.38.1002\n"
            "\tHardware version: 0\n\tNode GUID: 0x1c34da0300a1b2c4\n\tSystem image GUID: 0x1c34da0300a1b2c4\n"
            f"\tPort 1:\n\t\tState: {state}\n\t\tPhysical state: {phys}\n\t\tRate: {rate}\n\t\tBase lid: 0\n"
            "\t\tLMC: 0\n\t\tSM lid: 0\n\t\tCapability mask: 0x00010000\n\t\tPort GUID: 0x1e34dafffea1b2c4\n"
            "\t\tLink layer: Ethernet\n")


IBSTAT_ONE_DOWN = ("$ ibstat\n" + _ibstat_ca("mlx5_0", "Active", "LinkUp", 100)
                   + _ibstat_ca("mlx5_1", "Down", "Disabled", 40) + _ibstat_ca("mlx5_2", "Active", "LinkUp", 100))


def test_a_down_port_of_the_rails_model_is_a_candidate_when_the_rails_are_not_shown(tmp_path):
    rc, d, path = _diagnose(tmp_path, IBSTAT_ONE_DOWN, "--symptom", "hang")
    assert rc == 3 and d["verdict"] == "inconclusive" and d["healthy"] is None
    step = next(p for p in d["path"] if p["node"] == "trunk.ports_active")
    assert step["outcome"] == "unknown"  # the walk cannot tell a storage port from a rail
    first = d["findings"][0]
    assert (first["cause"], first["confidence"]) == ("ib_port_down", "low")
    assert first["supporting"] == [f"{path}:2-52: mlx5_1/1 DOWN (Disabled), beside ACTIVE ports of the same model"]
    assert first["next_step"] == ("paste NCCL's `NET/IB : Using` line or the job's NCCL_IB_HCA: a down port among "
                                  "them is a lost rail")


def test_every_port_active_gives_no_down_port_candidate(tmp_path):
    _, d, _ = _diagnose(tmp_path, IBSTAT_ONE_DOWN.replace("State: Down", "State: Active")
                        .replace("Physical state: Disabled", "Physical state: LinkUp"))
    assert "ib_port_down" not in _ranked(d)


def test_a_down_port_that_nccl_names_as_a_rail_is_decided_by_the_walk(tmp_path):
    using = "gpu-node-1:4242:4301 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE ; OOB eth0:10.0.0.1<0>\n"
    rc, d, _ = _diagnose(tmp_path, using + IBSTAT_ONE_DOWN)
    assert d["root_cause"]["id"] == "ib_port_down" and d["root_cause"]["confidence"] == "high"


# -- an error passed up through the bootstrap (NCCLCHECK's `FILE:LINE -> RESULT` trace) --------------
# The shape NCCL 2.16-2.18 prints when the WARN before it was not pasted (misc/socket.cc under bootstrap.cc).
Q = "node-a:2330:2658 [2] NCCL INFO "
TRACE = (f"{Q}NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:192.168.0.103<0>\n"
         f"{Q}misc/socket.cc:567 -> 2\n{Q}misc/socket.cc:618 -> 2\n{Q}bootstrap.cc:270 -> 2\n")


def test_a_bootstrap_error_trace_names_the_socket_interface_first(tmp_path):
    rc, d, path = _diagnose(tmp_path, TRACE)
    assert rc == 3 and d["verdict"] == "inconclusive" and d["healthy"] is None
    assert _ranked(d)[:3] == ["wrong_socket_ifname", "socket_blocked", "container_network_isolation"]
    first = d["findings"][0]
    assert first["supporting"] == [f"{path}:4: bootstrap.cc:270 -> 2"]
    assert first["next_step"] == ("paste the `Bootstrap : Using` line of every host, the job's NCCL_SOCKET_IFNAME "
                                  "and `ip -br addr`")


def test_nccl_2_30s_trace_with_the_function_is_read(tmp_path):
    _, d, path = _diagnose(tmp_path, f"{Q}bootstrap.cc:612 (bootstrapInit) -> 3\n")
    assert d["findings"][0]["cause"] == "wrong_socket_ifname"
    assert d["findings"][0]["supporting"] == [f"{path}:1: bootstrap.cc:612 (bootstrapInit) -> 3"]


def test_a_remote_error_or_another_files_trace_is_not_a_bootstrap_failure(tmp_path):
    # 6 is ncclRemoteError (a peer closed: it follows the peer's own failure); transport/net.cc is not TCP.
    for text in (f"{Q}bootstrap.cc:270 -> 6\n", f"{Q}transport/net.cc:295 -> 2\n{Q}transport.cc:179 -> 2\n"):
        _, d, _ = _diagnose(tmp_path, text)
        assert "bootstrap_failed" not in _errors(d) and "wrong_socket_ifname" not in _ranked(d), text


def test_a_warn_that_names_the_failure_keeps_its_own_kind_first(tmp_path):
    text = (f"node-a:2330:2658 [2] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.1.0.2<45123> "
            f"failed : Connection refused\n{Q}misc/socket.cc:567 -> 2\n{Q}bootstrap.cc:270 -> 2\n")
    _, d, path = _diagnose(tmp_path, text)
    assert d["findings"][0]["cause"] == "wrong_socket_ifname"
    assert d["findings"][0]["supporting"][0].startswith(f"{path}:1: misc/socket.cc socketStartConnect")


# -- a GPU-sharing layer named in the text (HAMi's device plugin preloads libvgpu.so) ---------------
HAMI = "The inference pods get their GPUs from HAMi v2.9.0; NCCL init never finishes.\n"


def test_a_text_that_names_hami_is_the_interposer_candidate_for_a_hang(tmp_path):
    rc, d, path = _diagnose(tmp_path, HAMI, "--symptom", "hang")
    assert rc == 3 and d["findings"][0]["cause"] == "gpu_sharing_interposer_deadlock"
    assert d["findings"][0]["supporting"] == [f"{path}:1: {HAMI.strip()}"]
    assert d["findings"][0]["confidence"] == "low"  # a name, not a stack in init: the runbook does not decide it


def test_hami_named_beside_a_rank_hung_in_init_is_decided(tmp_path):
    frame = "#5  0x00007f3c8e2a1b4d in bootstrapAllGather(void*, void*, int) () from /usr/lib/x86_64-linux-gnu/libnccl.so.2\n"
    _, d, _ = _diagnose(tmp_path, HAMI + frame)
    assert d["root_cause"]["id"] == "gpu_sharing_interposer_deadlock" and d["root_cause"]["confidence"] == "high"


def test_other_spellings_and_the_pass_through_switch_are_not_the_interposer():
    for text in ("Our admin, Hami, restarted the job.", "CUDA_DISABLE_CONTROL=true"):
        assert signatures.match(text) is None, text


# -- the OFI net plugin named: NCCL reaches EFA only through it (a dlopen by name) ------------------
OFI = "On our p5 nodes the image has no /opt/amazon/ofi-nccl/lib in LD_LIBRARY_PATH and training is slow.\n"


def test_a_named_ofi_plugin_path_ranks_the_plugin_not_loaded_first(tmp_path):
    rc, d, path = _diagnose(tmp_path, OFI, "--symptom", "slow")
    assert rc == 3 and _ranked(d)[:2] == ["net_plugin_not_loaded", "efa_ofi_misconfigured"]
    first = d["findings"][0]
    assert (first["confidence"], first["supporting"]) == ("low", [f"{path}:1: {OFI.strip()}"])
    assert first["next_step"] == ("paste the `NET/Plugin` and `Using network` lines of one rank (NCCL_DEBUG=INFO) "
                                  "and the job's LD_LIBRARY_PATH")


def test_a_plain_libnccl_net_so_is_not_the_ofi_plugin():
    # HPC-X's SHARP plugin (IBext) is libnccl-net.so as well.
    assert signatures.match("ls /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so") is None


def test_an_ofi_failure_beside_the_named_plugin_ranks_the_failure_first(tmp_path):
    warn = "ip-10-0-0-1:79:79 [0] get_ofi_provider:312 NCCL WARN NET/OFI Could not find any optimal provider\n"
    _, d, _ = _diagnose(tmp_path, OFI + warn)
    assert _ranked(d)[0] == "efa_ofi_misconfigured"


# -- lspci -tv: a GPU or RDMA NIC behind an emulated PCI bridge is a virtual machine -----------------
# Trees in pciutils ls-tree.c's drawing. Bare metal: a PCIe switch (its downstream ports are bridges at
# device numbers past 0), a dual-port NIC, SR-IOV virtual functions (ARI numbers them past device 0).
TREE_BARE = (
    "-+-[0000:00]-+-00.0  Advanced Micro Devices, Inc. [AMD] Starship/Matisse Root Complex\n"
    " |           +-01.1-[01-05]----00.0-[02-05]--+-00.0-[03]----00.0  NVIDIA Corporation GA100 [A100 SXM4 80GB]\n"
    " |           |                               +-04.0-[04]----00.0  Mellanox Technologies MT28908 Family [ConnectX-6]\n"
    " |           |                               \\-08.0-[05]--+-00.0  Mellanox Technologies MT28908 Family [ConnectX-6]\n"
    " |           |                                            \\-00.1  Mellanox Technologies MT28908 Family [ConnectX-6]\n"
    " |           \\-01.2-[06]--+-00.0  Mellanox Technologies MT28908 Family [ConnectX-6]\n"
    " |                        +-00.2  Mellanox Technologies MT28908 Family [ConnectX-6 Virtual Function]\n"
    " |                        \\-01.2  Mellanox Technologies MT28908 Family [ConnectX-6 Virtual Function]\n"
    " \\-[0000:40]-+-00.0  Advanced Micro Devices, Inc. [AMD] Starship/Matisse Root Complex\n"
    "             \\-03.1-[41]----00.0  NVIDIA Corporation GA100 [A100 SXM4 80GB]\n"
)
# A QEMU VM: GPUs and a VF at device numbers past 0 behind expander buses' bridges, under two roots.
TREE_VM = (
    "-+-[0000:00]-+-00.0  Intel Corporation 82G33/G31/P35/P31 Express DRAM Controller\n"
    " |           +-01.0  Red Hat, Inc. Virtio network device\n"
    " |           \\-1f.0  Intel Corporation 82801IB (ICH9) LPC Interface Controller\n"
    " +-[0000:d0]---00.0-[d1]--+-01.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
    " |                        +-02.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
    " |                        \\-03.0  Mellanox Technologies MT2910 Family [ConnectX-7 Virtual Function]\n"
    " \\-[0000:c0]---00.0-[c1]--+-01.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
    "                          \\-02.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
)
# A VM with every GPU behind one PCI bridge of one root bus (i440fx).
TREE_FLAT = (
    "-[0000:00]-+-00.0  Intel Corporation 440FX - 82441FX PMC [Natoma]\n"
    "           \\-1e.0-[01]--+-01.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
    "                        +-02.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
    "                        \\-03.0  NVIDIA Corporation GH100 [H100 SXM5 80GB]\n"
)
# `lspci -t` without -v (no names), as a bare-metal host prints it.
TREE_NO_NAMES = (
    "-[0000:00]-+-00.0\n"
    "           +-01.1-[01]--+-00.0\n"
    "           |            \\-00.1\n"
    "           +-02.1-[04-10]----00.0-[05-10]--+-00.0-[06]----00.0\n"
    "           |                               +-02.0-[07]----00.0\n"
    "           |                               \\-0d.0-[10]----00.0\n"
    "           \\-08.3-[13]----00.0\n"
)


def test_the_tree_parser_reads_each_device_on_its_bus():
    devices = parse("lspci_tree", TREE_BARE)
    assert len(devices) == 17
    gpu = next(d for d in devices if d["bus"] == "03")
    assert gpu == {"domain": "0000", "bus": "03", "root": False, "slot": "00.0", "device": 0, "function": 0,
                   "name": "NVIDIA Corporation GA100 [A100 SXM4 80GB]", "bridge": None}
    switch = [(d["bus"], d["slot"], d["bridge"]) for d in devices if d["bus"] == "02"]
    assert switch == [("02", "00.0", "03"), ("02", "04.0", "04"), ("02", "08.0", "05")]
    assert [(d["bus"], d["slot"]) for d in devices if d["bus"] == "06"] == [("06", "00.0"), ("06", "00.2"), ("06", "01.2")]
    assert [(d["bus"], d["root"]) for d in devices if d["slot"] == "03.1"] == [("40", True)]
    no_names = parse("lspci_tree", TREE_NO_NAMES)
    assert [(d["bus"], d["slot"], d["bridge"]) for d in no_names][-4:] == [
        ("05", "0d.0", "10"), ("10", "00.0", None), ("00", "08.3", "13"), ("13", "00.0", None)]


def test_text_that_is_not_a_tree_is_one_parse_error():
    with pytest.raises(ParseError, match=r"^expected lspci -tv output"):
        parse("lspci_tree", "-[0000:00]-\n")


def _host(tmp_path, text: str) -> dict:
    return facts(tmp_path, text)["log.host"]["pcie_tree"]


def test_a_bare_metal_tree_shows_no_virtual_machine(tmp_path):
    for text in (TREE_BARE, TREE_NO_NAMES):
        tree = _host(tmp_path, text)
        assert tree["virtual"] is False and tree["behind_pci_bridge"] == [], text


def test_a_vm_tree_with_gpus_under_two_roots_names_acs_and_ats_first(tmp_path):
    rc, d, path = _diagnose(tmp_path, TREE_VM, "--symptom", "slow")
    assert rc == 3 and _ranked(d)[:2] == ["pcie_acs_enabled", "vm_topology_hidden"]
    assert d["findings"][0]["supporting"] == [
        f"{path}:1-8: d1:01.0 NVIDIA Corporation GH100 [H100 SXM5 80GB] at a device number other than 0 behind a "
        "bridge (a PCIe port links device 0 only): an emulated PCI bridge, a virtual machine"]
    assert d["findings"][0]["next_step"].endswith(  # one step for the tied pair (dev11): the VM's topology first
        "then `lspci -vvv` of the NICs and of the bridges above them on the host (ACSCtl, ATSCtl) and "
        "`mlxconfig -d DEV q ATS_ENABLED` decide pcie_acs_enabled")
    tree = _host(tmp_path, TREE_VM)
    assert tree["gpu_root_buses"] == 2 and len(tree["behind_pci_bridge"]) == 4  # the VF too: a VM's passthrough


def test_a_vm_tree_with_every_gpu_under_one_root_names_the_hidden_topology_first(tmp_path):
    _, d, _ = _diagnose(tmp_path, TREE_FLAT, "--symptom", "slow")
    assert _ranked(d)[:2] == ["vm_topology_hidden", "pcie_acs_enabled"]


# -- NCCL 2.29+ names the completion status: `status=IBV_WC_RETRY_EXC_ERR(12) ... vendor_err=N` -----
def test_a_named_completion_status_ranks_as_its_number_does(tmp_path):
    p = "gpu-node-1:4242:4301 [0] "
    using = f"{p}NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
    old = (f"{p}transport/net_ib.cc:2470 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<45123> with status=12 "
           "opcode=0 len=0 vendor err 129 (Send) localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2 hca mlx5_0\n")
    new = (f"{p}transport/net_ib/p2p.cc:651 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<45123> with "
           "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  localGid ::ffff:10.0.0.1 "
           "remoteGids::ffff:10.0.0.2 hca mlx5_0\n")
    _, d_old, _ = _diagnose(tmp_path, using + old)
    _, d_new, _ = _diagnose(tmp_path, using + new)
    assert _ranked(d_new) == _ranked(d_old) == ["wrong_gid_index", "mtu_mismatch", "fabric_unreachable"]
    assert _errors(d_new)["retry_exceeded"]["details"] == [
        {"peer": "10.0.0.2", "local_gid": "::ffff:10.0.0.1", "remote_gid": "::ffff:10.0.0.2", "vendor_err": 129}]


# -- other NET/IB lines of 2.23-2.30 ----------------------------------------------------------------
def test_nics_of_two_link_types_name_the_hca_selection(tmp_path):
    line = ("gpu-node-1:4242:4301 [0] transport/net_ib.cc:1423 NCCL WARN NET/IB : Attempted to connect incompatible "
            "devices: [0]mlx5_0:1/IB and [8]mlx5_8:1/RoCE. Try selecting NICs of only one link type using NCCL_IB_HCA\n")
    _, d, path = _diagnose(tmp_path, line)
    assert _ranked(d)[0] == "wrong_ib_hca"
    assert d["findings"][0]["supporting"][0].startswith(f"{path}:1: transport/net_ib.cc NET/IB : Attempted to connect")


def test_a_warn_of_the_ib_data_path_file_p2p_cc_is_not_cuda_p2p():
    # From 2.29 the IB data path lives in transport/net_ib/p2p.cc: its file name says nothing of CUDA P2P.
    assert signatures.match("transport/net_ib/p2p.cc NET/IB: Got CQE with error (devIndex=0, req=0x1, comm=0x2 "
                            "(recv), wr_id=5, qp_num=77)").kind == "completion_error"
    assert signatures.match("transport/net_ib/connect.cc NET/IB: mlx5dv_create_qp failed to create QP: "
                            "Invalid argument").kind == "qp_failed"
    assert signatures.match("transport/p2p.cc P2P : cudaIpcOpenMemHandle failed").kind == "cuda_p2p"


IBSTATUS_ONE_DOWN = (  # infiniband-diags ibstatus: an NDR port up, one down (a down port reports 10 Gb/s SDR)
    "Infiniband device 'mlx5_0' port 1 status:\n\tdefault gid:\t fe80:0000:0000:0000:a088:c203:0012:3456\n"
    "\tbase lid:\t 0xc\n\tsm lid:\t\t 0x1\n\tstate:\t\t 4: ACTIVE\n\tphys state:\t 5: LinkUp\n"
    "\trate:\t\t 400 Gb/sec (4X NDR)\n\tlink_layer:\t InfiniBand\n\n"
    "Infiniband device 'mlx5_1' port 1 status:\n\tdefault gid:\t fe80:0000:0000:0000:a088:c203:0012:3457\n"
    "\tbase lid:\t 0xffff\n\tsm lid:\t\t 0x0\n\tstate:\t\t 1: DOWN\n\tphys state:\t 3: Disabled\n"
    "\trate:\t\t 10 Gb/sec (4X SDR)\n\tlink_layer:\t InfiniBand\n")


def test_a_down_ib_port_is_down_not_a_link_trained_low(tmp_path):
    _, d, path = _diagnose(tmp_path, IBSTATUS_ONE_DOWN)
    assert _ranked(d) == ["ib_port_down"]  # its SDR rate is what a port that is down reports, not a training
    assert d["findings"][0]["supporting"] == [f"{path}:1-17: mlx5_1/1 DOWN (Disabled), beside ACTIVE ports of the same model"]


# -- iproute2 `rdma link show`: the ports' state as the kernel's netlink gives it -------------------
RDMA_LINK = ("$ rdma link show\n"
             "link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 12 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP "
             "netdev ibp12s0\n"
             "link mlx5_1/1 subnet_prefix fe80:0000:0000:0000 lid 65535 sm_lid 0 lmc 0 state DOWN physical_state "
             "DISABLED netdev ibp13s0\n"
             "link mlx5_2/1 state ACTIVE physical_state LINK_UP netdev ens1f0np0\n")


def test_the_rdma_link_parser_reads_state_link_layer_and_netdev():
    ports = parse("rdma_link", RDMA_LINK)["ports"]
    assert ports["mlx5_0/1"] == {"state": "ACTIVE", "physical_state": "LINK_UP", "link_layer": "InfiniBand", "lid": 12,
                                 "sm_lid": 1, "netdev": "ibp12s0"}
    assert ports["mlx5_2/1"]["link_layer"] == "Ethernet" and ports["mlx5_2/1"]["lid"] is None  # no LID: not IB
    old = parse("rdma_link", "0/1: mlx5_0/1: state DOWN physical_state POLLING netdev ens2f0\n")["ports"]
    assert old == {"mlx5_0/1": {"state": "DOWN", "physical_state": "POLLING", "link_layer": "Ethernet", "lid": None,
                                "sm_lid": None, "netdev": "ens2f0"}}
    with pytest.raises(ParseError, match=r"^expected `rdma link show` lines"):
        parse("rdma_link", "link show\n")


def test_a_down_port_in_rdma_link_show_is_the_down_port_candidate(tmp_path):
    _, d, path = _diagnose(tmp_path, RDMA_LINK)
    assert _ranked(d) == ["ib_port_down"]
    assert d["findings"][0]["supporting"] == [f"{path}:2-4: mlx5_1/1 DOWN (Disabled), beside ACTIVE ports of the same model"]
    ports = facts(tmp_path, RDMA_LINK)["rdma.ports"]
    assert [(p["name"], p["link_layer"], p["state"]["name"], p["phys_state"]["name"], p["netdev"]) for p in ports] == [
        ("mlx5_0/1", "InfiniBand", "ACTIVE", "LinkUp", "ibp12s0"), ("mlx5_1/1", "InfiniBand", "DOWN", "Disabled", "ibp13s0"),
        ("mlx5_2/1", "Ethernet", "ACTIVE", "LinkUp", "ens1f0np0")]
