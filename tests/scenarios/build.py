"""Build the scenario bundles under tests/fixtures/scenarios/ (run: python -m tests.scenarios.build).

Each scenario is a healthy node model with one (or a few) edits, recorded through the real
probe catalogue and RecordingHost, exactly as `allreduce-doctor collect` would record it.
The expected result of each lives beside it in expected.yaml (python -m tests.scenarios.expected NAME).
"""

from __future__ import annotations

import sys
from pathlib import Path

from allreduce_doctor.hosts.base import HostIdentity, ProcessInfo
from tests.scenarios import nodes as N
from tests.scenarios import tools as T
from tests.scenarios.fakehost import FakeHost
from tests.scenarios.tools_link import ethtool_link

SCENARIOS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"

JOB_ENV = {
    "ib": {"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7",
           "NCCL_SOCKET_IFNAME": "bond0", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"},
    "roce": {"NCCL_DEBUG": "INFO", "NCCL_IB_GID_INDEX": "3", "NCCL_IB_TC": "106",
             "NCCL_SOCKET_IFNAME": "bond0", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"},
    # AWS p4d/p5 with the EFA installer (libfabric in /opt/amazon/efa, aws-ofi-nccl in /opt/amazon/ofi-nccl)
    "efa": {"NCCL_DEBUG": "INFO", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "NCCL_SOCKET_IFNAME": "^docker,lo",
            "LD_LIBRARY_PATH": "/opt/amazon/ofi-nccl/lib:/opt/amazon/efa/lib:/usr/local/cuda/lib64"},
    # GCP A3 with GPUDirect-TCPX (the plugin's own variables, as GKE's TCPX docs set them)
    "gvnic": {"NCCL_DEBUG": "INFO", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "NCCL_SOCKET_IFNAME": "eth0",
              "NCCL_GPUDIRECTTCPX_SOCKET_IFNAME": "eth1,eth2,eth3,eth4", "NCCL_GPUDIRECTTCPX_CTRL_DEV": "eth0",
              "NCCL_CROSS_NIC": "0", "NCCL_NET_GDR_LEVEL": "PIX", "NCCL_P2P_PXN_LEVEL": "0",
              "LD_LIBRARY_PATH": "/usr/local/tcpx/lib64:/usr/local/nvidia/lib64"},
}


def fake_host(node: N.Node) -> FakeHost:
    files, links = N._sysfs(node, later=False)
    files_later, _ = N._sysfs(node, later=True)
    changed = {k: v for k, v in files_later.items() if files.get(k) != v}
    commands = {
        ("ibstat",): T.ibstat(node),
        ("ibv_devinfo", "-v"): T.ibv_devinfo(node),
        ("lspci", "-vvv"): T.lspci_vvv(node),
        ("dmesg",): f"[    2.104223] mlx5_core 0000:1a:00.0: firmware version: {node.fw_ver}\n" + node.dmesg,
    }
    tools = {"ibstat", "ibv_devinfo", "lspci", "dmesg", "ethtool"}
    if node.gpus:
        tools.add("nvidia-smi")
        topo = T.topo_with_storage(node) if node.storage else T.topo_gds(node) if node.gds else node.topo
        commands[("nvidia-smi", "topo", "-m")] = topo or T.reference("nvidia-smi-topo-m-h100-8gpu-8nic.txt")
        commands[("nvidia-smi", "nvlink", "-s")] = T.nvlink_status(node.gpus, node.nvlink_inactive)
        commands[("nvidia-smi", "-q")] = T.nvidia_smi_q(node.gpus, node.fabric_state, node.fabric_status)
    later = {}
    if node.fabric == "ib" and node.smp_tools:
        tools |= {"smpquery", "perfquery"}
        commands.update(T.peer_commands(node, later=False))
        later.update(T.peer_commands(node, later=True))
    if node.fabric == "roce":
        tools.add("mlnx_qos" if node.driver == "mlx5" else "dcb")
        for i in range(node.ports):
            nd = N.netdev(node, i)
            for member in (nd, N.lag_member(node, i)):
                if member:
                    commands[("ethtool", member)] = ethtool_link(node, member)
            commands[("ethtool", "-S", nd)] = T.ethtool_stats(node, i, later=False)
            later[("ethtool", "-S", nd)] = T.ethtool_stats(node, i, later=True)
            if N.lag_member(node, i):  # the second bond member: its own counters and QoS
                second = N.lag_member(node, i)
                commands[("ethtool", "-S", second)] = T.ethtool_stats(node, i, later=False, member=1)
                later[("ethtool", "-S", second)] = T.ethtool_stats(node, i, later=True, member=1)
                commands[("mlnx_qos", "-i", second)] = T.mlnx_qos(node, i)
            if node.driver == "mlx5":
                commands[("mlnx_qos", "-i", nd)] = T.mlnx_qos(node, i)
            else:
                commands[("dcb", "-j", "pfc", "show", "dev", nd)] = T.dcb_pfc(node, i)
                commands[("dcb", "-j", "app", "show", "dev", nd)] = T.dcb_app()
    env = {k: v for k, v in {**JOB_ENV[node.fabric], **node.env}.items() if v is not None}
    procs = [ProcessInfo(N.JOB_PID, "python3", ["python3", "train.py", "--config", "llama70b.yaml"], env, True,
                         nccl_lib=node.nccl_lib, rdma_libs=N.job_rdma_libs(node), uid=1000,
                         net_libs=None if node.net_libs is None else list(node.net_libs))] if node.job else []
    host = FakeHost(files=files, files_later=changed, links=links, tools=tools, commands=commands,
                    commands_later=later, processes=procs,
                    exports={f"/proc/{N.JOB_PID}/root{path}": [f"ncclNetPlugin_v{v}" for v in versions]
                             for path, versions in node.plugin_exports.items()},
                    identity=HostIdentity(node.hostname, node.kernel, 0 if node.root else 1000, node.root))
    for path in set(files) - set(files_later):  # a counter gone from the second sample
        del host.samples[1][path]
    return host


def record(node: N.Node, out: Path) -> None:
    from allreduce_doctor.capture import record as record_bundle

    if out.exists():
        out.unlink()
    record_bundle(fake_host(node), str(out), interval=1.0)


NO_TC = {"NCCL_IB_TC": None}
ALL_PORTS = range(8)
DGX_HCA = {"NCCL_IB_HCA": "mlx5_0,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_9,mlx5_10,mlx5_11"}


def dgx_h100(**changes) -> N.Node:
    """A DGX H100: 8 compute ConnectX-7 rails and two dual-port storage ConnectX-7 cards of the
    same model (MT4129): one storage port at 400G, one at HDR 200G, one uncabled, one disabled."""
    fields = dict(ports=12, devices=N.DGX_DEVICES, storage=(8, 9, 10, 11), dmi=("NVIDIA", "DGXH100"),
                  state={10: ("1: DOWN", "2: Polling"), 11: ("1: DOWN", "3: Disabled")},
                  rate={9: "200 Gb/sec (4X HDR)", 10: "10 Gb/sec (4X SDR)", 11: "10 Gb/sec (4X SDR)"})
    for name, value in changes.items():
        fields[name] = {**fields[name], **value} if isinstance(fields.get(name), dict) else value
    return N.Node("ib", **fields)


AARCH64_LIB = "/usr/lib/aarch64-linux-gnu/libnccl.so"
GB200_HCA = {"NCCL_IB_HCA": "=mlx5_0,mlx5_1,mlx5_2,mlx5_3", "CUDA_VISIBLE_DEVICES": "0,1,2,3"}
# The real name lspci gives the PMC-Sierra (Microchip) switch bridge of the reference outputs
MICROCHIP_SWITCH = "PMC-Sierra Inc. Device 4128"


def gb200_tray(**changes) -> N.Node:
    """A DGX GB200 compute tray (DGX GB200 user guide, Hardware): 4 GPUs, 4 ConnectX-7 InfiniBand
    compute ports (mlx5_0-3, NDR 400G) and 2 dual-port BlueField-3 Ethernet (mlx5_4-7, 200GbE).
    nvidia-smi topo -m from a real tray (sgl-project/sglang#11208: every GPU-NIC cell SYS, a GPU
    NUMA ID per GPU), with the 8 NICs of the user guide; device names, the BF3 rate, the NICs' NUMA
    nodes (two CX-7 and one BF3 per Grace) and the DMI strings are modelled, not read from a tray. The job lists the compute rails in NCCL_IB_HCA."""
    fields = dict(ports=8, gpus=4, eth_ports=(4, 5, 6, 7), rate={i: "200 Gb/sec (4X HDR)" for i in range(4, 8)},
                  topo=T.topo_gb200(), dmi=("NVIDIA", "GB200 NVL"), nccl_lib=f"{AARCH64_LIB}.2.27.7",
                  env=dict(GB200_HCA), nic_numa={0: 0, 1: 0, 2: 1, 3: 1, 4: 0, 5: 0, 6: 1, 7: 1})
    for name, value in changes.items():
        fields[name] = {**fields[name], **value} if isinstance(fields.get(name), dict) else value
    return N.Node("ib", **fields)


def hgx_gds(**changes) -> N.Node:
    """An HGX H100 with GPUDirect Storage: 8 compute ConnectX-7 rails PIX to their GPUs and 4
    storage ConnectX-7 HCAs of the same model (mlx5_8-11), each under the PCIe switch of two GPUs
    (GDS design guide: storage NICs and GPUs under one switch). The job lists the 8 compute rails."""
    fields = dict(ports=12, gds=(8, 9, 10, 11), env={"NCCL_IB_HCA": "=" + ",".join(f"mlx5_{i}" for i in range(8))})
    for name, value in changes.items():
        fields[name] = {**fields[name], **value} if isinstance(fields.get(name), dict) else value
    return N.Node("ib", **fields)


# mlx5 PCIe counters (counters.rst "PCIe counters"; the rd/wr stall values are a percentage gauge)
PCIE_ZERO = {"rx_pci_signal_integrity": 0, "tx_pci_signal_integrity": 0, "outbound_pci_buffer_overflow": 0,
             "outbound_pci_stalled_rd": 0, "outbound_pci_stalled_wr": 0, "outbound_pci_stalled_rd_events": 0,
             "outbound_pci_stalled_wr_events": 0}
LAG_DEVICES = tuple(f"mlx5_bond_{i}" for i in range(8))  # RoCE LAG: drivers/infiniband/hw/mlx5/main.c
LAG_HCA = {"NCCL_IB_HCA": "mlx5_bond"}
PRIO_DISCARDS = {f"rx_prio{p}_discards": 0 for p in range(8)}
NDR_SWITCH = ("FDR", "EDR", "HDR", "NDR")  # a Quantum-2 switch port: supports up to NDR
PINNED16 = ("SymbolErrorCounter", "PortRcvErrors")
BF3 = dict(hca_type="MT41692", fw_ver="32.38.3056", dmi=("Supermicro", "SYS-821GE-TNHR"))  # BlueField-3 SuperNIC, 400G

# Net plugins (issue 26). aws-ofi-nccl installs libnccl-net-ofi.so from 1.15 (src/Makefile.am), the
# EFA installer puts it in /opt/amazon/ofi-nccl/lib and libfabric in /opt/amazon/efa/lib; older
# images build it as libnccl-net.so in /opt/aws-ofi-nccl/lib. TCPX: libnccl-net.so in
# /usr/local/tcpx/lib64 (nccl-plugin-gpudirecttcpx README: on LD_LIBRARY_PATH).
OFI = "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so"
OFI_OLD = "/opt/aws-ofi-nccl/lib/libnccl-net.so"
LIBFABRIC = "/opt/amazon/efa/lib/libfabric.so.1"
TCPX = "/usr/local/tcpx/lib64/libnccl-net.so"
TCPXO = "/usr/local/nvidia/lib64/libnccl-net.so"
# The ncclNetPlugin_vN each defines: aws-ofi-nccl v1.21.1 v6..v12 (src/nccl_ofi_interface_nvidia.cpp),
# v1.7.4-aws v2..v6 (src/compat_v2.c .. compat_v6.c); v1.4.0 only NCCL_PLUGIN_SYMBOL of the
# nccl_net.h it was built with (v4 from NCCL 2.8 to 2.11); GPUDirect-TCPX v7 (src/nccl_plugin.cc).
OFI_EXPORTS = (12, 11, 10, 9, 8, 7, 6)
OFI_174_EXPORTS = (6, 5, 4, 3, 2)
TCPX_EXPORTS = (7,)


def aws(efa: tuple = N.P5_EFA, product: str = "p5.48xlarge", plugin: str = OFI, exports: tuple = OFI_EXPORTS,
        **changes) -> N.Node:
    """An EC2 GPU instance with the EFA installer: EFA devices only (no IB/RoCE port), the job maps
    aws-ofi-nccl and the installer's libfabric (and rdma-core's libibverbs and libefa)."""
    fields = dict(ports=0, driver="efa", efa_devices=efa, dmi=("Amazon EC2", product), netdevs=("lo", "ens32", "docker0"),
                  net_libs=(plugin, LIBFABRIC), job_files={plugin: "", LIBFABRIC: ""}, plugin_exports={plugin: exports},
                  nccl_lib="/usr/lib/x86_64-linux-gnu/libnccl.so.2.23.4", hostname="ip-10-0-1-11")
    fields.update(changes)
    return N.Node("efa", **fields)


def gcp(plugin: str = TCPX, gvnic: int = 5, exports: tuple | None = TCPX_EXPORTS, **changes) -> N.Node:
    """A GCP A3 (5 gVNIC: eth0 control, eth1-eth4 data) or A3 Mega (9) VM: no RDMA device, no
    rdma-core in the image, the job maps the GPUDirect-TCPX/TCPXO plugin."""
    fields = dict(ports=0, gvnic=gvnic, dmi=("Google", "Google Compute Engine"), netdevs=("lo", "docker0"),
                  net_libs=(plugin,), job_files={plugin: ""}, plugin_exports={plugin: exports} if exports else {}, verbs=False, provider=False, host_verbs=False,
                  uverbs=False, nccl_lib="/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5", hostname="a3-node-0")
    fields.update(changes)
    return N.Node("gvnic", **fields)


TCPXO_ENV = {"NCCL_GPUDIRECTTCPX_SOCKET_IFNAME": None, "NCCL_GPUDIRECTTCPX_CTRL_DEV": None,
             "NCCL_FASTRAK_CTRL_DEV": "eth0", "NCCL_FASTRAK_IFNAME": "eth1,eth2,eth3,eth4,eth5,eth6,eth7,eth8",
             "NCCL_FASTRAK_USE_SNAP": "1", "LD_LIBRARY_PATH": "/usr/local/nvidia/lib64"}
# A Kubernetes pod: its own netns (lo, the CNI's eth0), NCCL_SOCKET_IFNAME=eth0; the host has no eth0.
POD = dict(job_ifaces=("lo", "eth0"), env={"NCCL_SOCKET_IFNAME": "eth0"})
# Broadcom BCM57508 whose devices rdma-core's udev rules renamed by PCI path (NAME_FALLBACK:
# kernel-boot/rdma-persistent-naming.rules, Documentation/udev.md): rocep26s0f0 for bus 0x1a.
BNXT_RENAMED = dict(driver="bnxt", hca_type="BCM57508", fw_ver="227.1.111.0", kernel="6.14.0-15-generic",
                    bnxt_cc=(1, 1), devices=tuple(f"rocep{int(b, 16)}s0f0" for b in N.NIC_BUSES[:8]))

SCENARIOS: dict[str, N.Node] = {
    "ib-healthy": N.Node("ib"),
    "roce-healthy": N.Node("roce"),
    "ib-port-down": N.Node("ib", state={3: ("1: DOWN", "2: Polling")}, rate={3: "10 Gb/sec (4X SDR)"}),
    "ib-link-degraded": N.Node("ib", rate={5: "200 Gb/sec (2X NDR)"}),
    "ib-symbol-errors": N.Node("ib", counter_growth={2: {"symbol_error": 47, "link_error_recovery": 2}}),
    "roce-pfc-off": N.Node("roce", pfc={4: "0   0   0   0   0   0   0   0"}),
    "roce-ecn-off": N.Node("roce", ecn={i: {3: 0} for i in range(8)}),
    "roce-gid-link-local": N.Node("roce", env={"NCCL_IB_GID_INDEX": "1"}),
    "ib-no-peermem": N.Node("ib", peermem=False, gpu_driver=N.PROPRIETARY_DRIVER),
    "ib-pcie-x8": N.Node("ib", pci_width={6: 8}),
    # the rest of the cause catalogue
    "ib-no-sm": N.Node("ib", state={2: ("2: INIT", "5: LinkUp")}),
    "container-no-devices": N.Node("roce", uverbs=False),
    "container-no-libibverbs": N.Node("ib", verbs=False, provider=False),
    "ib-disabled-env": N.Node("ib", env={"NCCL_IB_DISABLE": "1"}),
    "ib-wrong-hca": N.Node("ib", env={"NCCL_IB_HCA": "mlx5_0,mlx5_1,mlx5_2,mlx5_3"}),
    "wrong-socket-ifname": N.Node("roce", env={"NCCL_SOCKET_IFNAME": "docker0"}),
    "ib-acs-redirect": N.Node("ib", acs_redirect=True),
    "ib-iommu-on": N.Node("ib", cmdline="BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=UUID=4f1c ro intel_iommu=on quiet",
                          iommu_type="DMA-FQ"),
    "p2p-disabled-env": N.Node("ib", env={"NCCL_P2P_DISABLE": "1"}),
    "nvlink-inactive": N.Node("ib", nvlink_inactive={3: [5, 6]}),
    "fabric-manager-not-ready": N.Node("ib", fabric_state="In Progress"),
    "nccl-tuning-override": N.Node("roce", env={"NCCL_MAX_NCHANNELS": "2", "NCCL_PROTO": "LL"}),
    "numa-remote-nics": N.Node("ib", ports=4, topo=T.topo_remote_nics()),
    "vm-flat-topology": N.Node("ib", dmi=("QEMU", "Standard PC (Q35 + ICH9, 2009)"), topo=T.topo_vm()),
    "ib-mtu-2048": N.Node("ib", active_mtu="2048 (4)"),
    "ib-xmit-discards": N.Node("ib", counter_growth={1: {"port_xmit_discards": 12}}),
    "ib-congestion": N.Node("ib", counter_growth={i: {"port_xmit_wait": 1_200_000_000} for i in (0, 3, 6)}),
    "roce-mtu-1500": N.Node("roce", netdev_mtu=1500),
    "roce-gid-drift": N.Node("roce", gid_extra_ipv6=(7,)),
    "roce-tc-prio0": N.Node("roce", env=NO_TC, traffic_prio=0),
    "roce-packet-loss": N.Node("roce", counter_growth={2: {"out_of_sequence": 4812, "packet_seq_err": 311,
                                                          "local_ack_timeout_err": 9}},
                               eth_growth={2: {"rx_discards_phy": 5120}}),
    "roce-pause-storm": N.Node("roce", eth_growth={i: {"tx_pause_storm_warning_events": 2, "rx_prio3_pause": 450_000,
                                                      "tx_prio3_pause": 380_000, "rx_prio3_pause_duration": 450_000,
                                                      "tx_prio3_pause_duration": 380_000} for i in ALL_PORTS}),
    "roce-congestion": N.Node("roce", counter_growth={i: {"np_cnp_sent": 180_000, "rp_cnp_handled": 175_000,
                                                         "np_ecn_marked_roce_packets": 190_000} for i in ALL_PORTS}),
    "roce-at-hardware-limit": N.Node("roce"),
    # counters that cannot be judged are unknown, never healthy (issue 13 items 2, 4; issue 15 item 5)
    "ib-xmit-wait-pinned": N.Node("ib", pinned={"port_xmit_wait": 4_294_967_295}),
    "ib-congestion-counter-deleted": N.Node("ib", counter_growth={i: {"port_xmit_wait": 1_200_000_000} for i in (0, 3, 6)},
                                            gone_later={i: ("port_xmit_wait",) for i in (0, 3, 6)}),
    "ib-idle": N.Node("ib", traffic=False),
    "roce-bnxt-loss": N.Node("roce", driver="bnxt", hca_type="BCM57508", fw_ver="227.1.111.0",
                             counter_growth={2: {"to_retransmits": 4812, "seq_err_naks_rcvd": 311}}),
    "roce-bnxt-healthy": N.Node("roce", driver="bnxt", hca_type="BCM57508", fw_ver="227.1.111.0"),
    "roce-loaded-healthy": N.Node("roce", eth_growth={i: {"rx_buffer_passed_thres_phy": 3, "rx_out_of_buffer": 120,
                                                          "rx_prio3_pause_duration": 40_000,
                                                          "tx_prio3_pause_duration": 12_000} for i in ALL_PORTS}),
    # no false alarms
    "ib-static-high-counters": N.Node("ib", static_counters={"symbol_error": 60_000, "port_rcv_errors": 4_100,
                                                             "link_error_recovery": 200}),
    "roce-idle": N.Node("roce", traffic=False),
    "ib-hdr-200g": N.Node("ib", hca_type="MT4123", fw_ver="20.39.1002", base_rate="200 Gb/sec (4X HDR)"),
    "no-gpus": N.Node("ib", gpus=0, peermem=False),
    # production layouts that are healthy (issue 13)
    "dgx-h100-storage-rails": dgx_h100(env=DGX_HCA),
    "dgx-h100-storage-rails-no-job": dgx_h100(job=False),
    "roce-bluefield3": N.Node("roce", **BF3),
    "dmabuf-without-peermem": N.Node("ib", peermem=False),
    "roce-global-tclass": N.Node("roce", env=NO_TC, global_tclass=106),
    "roce-tc-set-after-exec": N.Node("roce", env=NO_TC),
    "roce-declared-lossy": N.Node("roce", pfc={i: "0   0   0   0   0   0   0   0" for i in ALL_PORTS}),
    "roce-gid-auto-nccl-2-21": N.Node("roce", env={"NCCL_IB_GID_INDEX": None}),
    "ib-cx7-at-hdr-declared": N.Node("ib", base_rate="200 Gb/sec (4X HDR)"),
    "pcie-gen5-nic-gen4-slot": N.Node("ib", nic_gts=16, slot_gts=16),
    "acs-root-port-iommu-pt": N.Node("ib", root_port_acs=True),
    # the misses those checks must still find
    "pcie-gen5-nic-gen4-in-gen5-slot": N.Node("ib", nic_gts=16),
    "iommu-default-translated": N.Node("ib", cmdline="BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=UUID=4f1c ro quiet",
                                       iommu_type="DMA-FQ"),
    "dgx-h100-hca-takes-storage": dgx_h100(env={"NCCL_IB_HCA": DGX_HCA["NCCL_IB_HCA"] + ",mlx5_1"}),
    "dgx-h100-rail-down": dgx_h100(env=DGX_HCA, state={3: ("1: DOWN", "2: Polling")}, rate={3: "10 Gb/sec (4X SDR)"}),
    "no-peermem-nccl-2-12": N.Node("ib", peermem=False, nccl_lib="/usr/lib/x86_64-linux-gnu/libnccl.so.2.12.12"),
    "no-peermem-unknown-nccl": N.Node("ib", peermem=False, nccl_lib="/opt/venv/lib/nvidia/nccl/lib/libnccl.so.2"),
    "roce-gid-auto-nccl-2-20": N.Node("roce", env={"NCCL_IB_GID_INDEX": None},
                                      nccl_lib="/usr/lib/x86_64-linux-gnu/libnccl.so.2.20.5"),
    "roce-declared-lossy-ecn-off": N.Node("roce", pfc={i: "0   0   0   0   0   0   0   0" for i in ALL_PORTS},
                                          ecn={i: {3: 0} for i in ALL_PORTS}),
    "ib-all-ports-below-rating": N.Node("ib", base_rate="200 Gb/sec (4X HDR)", peer_speeds=NDR_SWITCH),
    "ib-below-declared-rate": N.Node("ib", base_rate="200 Gb/sec (4X HDR)"),
    "fabric-manager-insufficient-resources": N.Node("ib", fabric_status="Insufficient Resources"),
    # several faults at once
    "multi-ib-disabled-ecn-off": N.Node("roce", env={"NCCL_IB_DISABLE": "1"}, ecn={i: {3: 0} for i in ALL_PORTS}),
    "multi-degraded-symbol-errors": N.Node("ib", rate={5: "200 Gb/sec (2X NDR)"},
                                           counter_growth={5: {"symbol_error": 30, "link_error_recovery": 1}}),
    # pcie brief (issues 13 FA-5/C-4, 14 item 3): ACS judged with ATS on switch ports above GPUs/NICs,
    # the GID's netdev, NCCL_IB_ADDR_RANGE in NCCL's automatic GID choice
    "acs-directtrans-ats": N.Node("ib", acs_redirect=True, acs_direct_trans=True, nic_ats=True),
    "acs-redirect-idle-bridge": N.Node("ib", acs_idle_bridge=True),
    "acs-directtrans-no-ats": N.Node("ib", acs_redirect=True, acs_direct_trans=True, nic_ats=False),
    "roce-gid-on-vlan": N.Node("roce", gid_vlan=ALL_PORTS),
    "roce-gid-addr-range": N.Node("roce", env={"NCCL_IB_GID_INDEX": None, "NCCL_IB_ADDR_RANGE": "10.0.0.0/16"}),
    "roce-gid-addr-range-no-match": N.Node("roce", env={"NCCL_IB_GID_INDEX": None, "NCCL_IB_ADDR_RANGE": "192.168.0.0/16"}),
    # brief roce (issue 13: C-1, C-2, C-3, the site's pfc_priority, ECN on bnxt_re)
    "roce-declared-priority-3": N.Node("roce"),
    "roce-declared-priority-4": N.Node("roce"),
    "roce-two-node-at-limit": N.Node("roce"),
    "ib-tree-busbw-at-limit": N.Node("ib"),
    "roce-pcie-counters-healthy": N.Node("roce", eth_extra={**PCIE_ZERO, "tx_pci_signal_integrity": 3},
                                         eth_growth={i: {"tx_prio3_pause_duration": 12_000} for i in ALL_PORTS}),
    "roce-pause-source-pcie": N.Node("roce", eth_extra=PCIE_ZERO, counter_growth={2: {"out_of_sequence": 180}},
                                     eth_growth={2: {"tx_prio3_pause": 310_000, "tx_prio3_pause_duration": 420_000,
                                                     "outbound_pci_stalled_wr_events": 1,
                                                     "outbound_pci_buffer_overflow": 800,
                                                     "rx_buffer_passed_thres_phy": 52}}),
    "roce-buffer-shared": N.Node("roce", prio2buffer="0   0   0   0   0   0   0   0"),
    "roce-buffer-zero": N.Node("roce", buffer_sizes="130944,0,0,0,0,0,0,0"),
    "roce-cnp-dscp-48": N.Node("roce", cnp_dscp=48),
    "roce-cnp-on-data-priority": N.Node("roce", cnp_dscp=26),
    "roce-bnxt-cc-on": N.Node("roce", driver="bnxt", hca_type="BCM57508", fw_ver="227.1.111.0",
                              kernel="6.14.0-15-generic", bnxt_cc=(1, 1)),
    "roce-lag-healthy": N.Node("roce", lag=True, devices=LAG_DEVICES, env=LAG_HCA, eth_extra=PRIO_DISCARDS),
    "roce-lag-member-loss": N.Node("roce", lag=True, devices=LAG_DEVICES, env=LAG_HCA, eth_extra=PRIO_DISCARDS,
                                   lag_growth={1: {"rx_prio3_discards": 48_000}}),
    "roce-bnxt-cc-off": N.Node("roce", driver="bnxt", hca_type="BCM57508", fw_ver="227.1.111.0",
                               kernel="6.14.0-15-generic", bnxt_cc=(0, 0)),
    # brief node (issue 13, review FA-6, MF-6, MF-7): the job's libraries, environment and files, the kernel log
    "job-verbs-host-without": N.Node("ib", host_verbs=False),
    "job-verbs-not-loaded-yet": N.Node("roce", verbs_loaded=False),
    "job-image-no-mlx5-provider": N.Node("ib", provider=False),
    "job-image-no-verbs-not-loaded": N.Node("roce", verbs=False, provider=False, verbs_loaded=False),
    "nccl-net-socket-env": N.Node("ib", env={"NCCL_NET": "Socket"}),
    "nccl-net-ib-env": N.Node("ib", env={"NCCL_NET": "IB"}),
    "gdr-level-loc-env": N.Node("ib", env={"NCCL_NET_GDR_LEVEL": "LOC"}),
    "gdr-level-sys-env": N.Node("ib", env={"NCCL_NET_GDR_LEVEL": "SYS"}),
    "dmabuf-disabled-no-peermem": N.Node("ib", peermem=False, env={"NCCL_DMABUF_ENABLE": "0"}),
    "ib-adaptive-routing-off-env": N.Node("ib", env={"NCCL_IB_ADAPTIVE_ROUTING": "0"}),
    "roce-adaptive-routing-off": N.Node("roce", env={"NCCL_IB_ADAPTIVE_ROUTING": "0"}),
    "ib-timeout-below-default": N.Node("ib", env={"NCCL_IB_TIMEOUT": "14", "NCCL_IB_RETRY_CNT": "3"}),
    "ib-timeout-raised": N.Node("ib", env={"NCCL_IB_TIMEOUT": "22", "NCCL_IB_RETRY_CNT": "7"}),
    "job-user-nccl-conf-ib-disable": N.Node("ib", job_files={"/home/alice/.nccl.conf": "NCCL_IB_DISABLE=1\n"}),
    "job-conf-file-net-socket": N.Node("ib", env={"NCCL_CONF_FILE": "/etc/nccl/job.conf"},
                                       nccl_lib="/usr/lib/x86_64-linux-gnu/libnccl.so.2.23.4",
                                       job_files={"/etc/nccl/job.conf": "NCCL_NET=Socket\n"}),
    "job-env-overrides-system-conf": N.Node("ib", env={"NCCL_IB_DISABLE": "0"},
                                            job_files={"/etc/nccl.conf": "NCCL_IB_DISABLE=1\nNCCL_DEBUG=WARN\n"}),
    "roce-link-down-events": N.Node("roce", eth_growth={4: {"link_down_events_phy": 2}}),
    "roce-post-fec-symbol-errors": N.Node("roce", eth_growth={6: {"rx_pcs_symbol_err_phy": 37}}),
    "roce-fec-corrected-bits": N.Node("roce", eth_growth={i: {"rx_corrected_bits_phy": 91_000} for i in ALL_PORTS}),
    "dmesg-link-flap": N.Node("roce", dmesg=N.DMESG_BOOT_LINKS + N.DMESG_FLAP),
    "dmesg-boot-link-up": N.Node("roce", dmesg=N.DMESG_BOOT_LINKS),
    "dmesg-gpu-xid-79": N.Node("ib", dmesg=N.DMESG_XID_79),
    "dmesg-gpu-xid-application": N.Node("ib", dmesg=N.DMESG_XID_31),
    "dmesg-pcie-aer-uncorrected": N.Node("ib", dmesg=N.DMESG_AER_UNCORRECTED),
    "dmesg-pcie-aer-corrected": N.Node("ib", dmesg=N.DMESG_AER_CORRECTED),
    "dmesg-peermem-errors": N.Node("ib", dmesg=N.DMESG_PEERMEM),
    # brief peer (issue 13, review MF-8): the switch side of each IB link
    "ib-peer-tx-errors": N.Node("ib", peer_growth={4: {"symbol_error": 212, "port_rcv_errors": 9}}),
    "ib-peer-clean": N.Node("ib"),
    "ib-peer-nonroot": N.Node("ib", root=False),
    "dmesg-pcie-aer-nvme": N.Node("ib", dmesg=N.DMESG_AER_NVME),
    # issue 26 item 4 (review MF-14): what both ends of a link support decides degraded or built for it
    "ib-hdr-switch-hdr-only": N.Node("ib", base_rate="200 Gb/sec (4X HDR)"),
    "ib-below-rating-caps-unread": N.Node("ib", base_rate="200 Gb/sec (4X HDR)", smp_tools=False),
    "ib-ndv5-vf-ndr": N.Node("ib", hca_type="MT4126", pci_device="0x101e"),
    "roce-200g-both-advertise-400g": N.Node("roce", base_rate="200 Gb/sec (4X HDR)", eth_speed_mbps=200000,
                                            eth_partner=(400000, 200000, 100000)),
    "roce-200g-partner-200g": N.Node("roce", base_rate="200 Gb/sec (4X HDR)", eth_speed_mbps=200000,
                                     eth_partner=(200000, 100000)),
    "roce-cx7-2x200g-dual-port": N.Node("roce", base_rate="200 Gb/sec (4X HDR)", eth_speed_mbps=200000,
                                        eth_supported=(200000, 100000, 50000, 25000)),
    # issue 26 item 5: ECN from the congestion counters where no ecn/ sysfs exists (inbox mlx5)
    "roce-ecn-off-no-sysfs-marks-without-cnp": N.Node("roce", ecn_sysfs=False, flat=("np_cnp_sent",)),
    "roce-no-ecn-sysfs-idle": N.Node("roce", ecn_sysfs=False, traffic=False),
    "roce-rp-cnp-ignored": N.Node("roce", ecn_sysfs=False, counter_growth={i: {"rp_cnp_ignored": 5_200} for i in ALL_PORTS}),
    "roce-inbox-ecn-counters-healthy": N.Node("roce", ecn_sysfs=False),
    # the switch side read with perfquery -x where its 16-bit PortCounters sit saturated
    "ib-peer-saturated-extended": N.Node("ib", peer_pinned16=PINNED16, peer_growth={4: {"symbol_error": 212}}),
    "ib-peer-saturated-no-extended": N.Node("ib", peer_pinned16=PINNED16, peer_ext=False),
    # net plugins (issue 26): EFA and GPUDirect-TCPX/TCPXO nodes are not socket_fallback
    "efa-p5-healthy": aws(),
    "efa-p4d-healthy": aws(N.P4D_EFA, "p4d.24xlarge", OFI_OLD, OFI_174_EXPORTS, nccl_lib="/usr/lib/x86_64-linux-gnu/libnccl.so.2.18.5",
                           env={"LD_LIBRARY_PATH": "/opt/aws-ofi-nccl/lib:/opt/amazon/efa/lib"}),
    "efa-p5-no-job": aws(job=False),
    "efa-p5-plugin-not-on-path": aws(net_libs=(), env={"LD_LIBRARY_PATH": "/opt/amazon/efa/lib:/usr/local/cuda/lib64"}),
    "efa-p5-pod-without-efa-devices": aws(efa_in_job=False),
    "efa-p5-fi-provider-tcp": aws(env={"FI_PROVIDER": "tcp"}),
    "efa-p5-libfabric-without-efa": aws(net_libs=(OFI, "/usr/local/lib/libfabric.so.1"), provider=False,
                                        job_files={OFI: "", "/usr/local/lib/libfabric.so.1": ""},
                                        env={"LD_LIBRARY_PATH": "/opt/amazon/ofi-nccl/lib:/usr/local/lib"}),
    "efa-p5-device-rdma-off": aws(env={"FI_EFA_USE_DEVICE_RDMA": "0"}),
    # An old image's aws-ofi-nccl 1.4.0 (built on NCCL 2.8-2.11 headers: ncclNetPlugin_v4 only) beside
    # NCCL 2.23.4, which looks up v8..v5 (src/net.cc): NCCL closes the plugin, so the job maps none.
    "efa-p5-plugin-version-mismatch": aws(plugin=OFI_OLD, exports=(4,), net_libs=(),
                                          env={"LD_LIBRARY_PATH": "/opt/aws-ofi-nccl/lib:/opt/amazon/efa/lib"}),
    # issue 26 gap 1: the trunk's fabric-independent checks (PCIe, Xid, ACS, IOMMU) run on plugin nodes too
    "efa-p5-iommu-translated": aws(cmdline="BOOT_IMAGE=/vmlinuz-6.8.0-1015-aws root=UUID=4f1c ro quiet", iommu_type="DMA-FQ"),
    "efa-p5-gpu-pcie-x8": aws(gpu_width={3: 8}),
    "gcp-a3-gpu-xid-79": gcp(dmesg=N.DMESG_XID_79),
    "gcp-a3-tcpx-healthy": gcp(),
    "gcp-a3-mega-tcpxo-healthy": gcp(TCPXO, 9, None, env=TCPXO_ENV),  # TCPXO's exports: not read
    "gcp-a3-tcpx-plugin-not-loaded": gcp(net_libs=(), job_files={}, env={"NCCL_NET": "GPUDirectTCPX"}),
    # issue 26/27 (review FA-10..FA-14, MF-13): NCCL's selections as NCCL derives them at the job's version
    "gb200-tray-healthy": gb200_tray(),
    "gb200-tray-rail-down": gb200_tray(state={1: ("1: DOWN", "2: Polling")}, rate={1: "10 Gb/sec (4X SDR)"}),
    # issue 26 gap 4: no NCCL_IB_HCA; the rails are the InfiniBand compute ports, one down
    "gb200-tray-no-hca-healthy": gb200_tray(env={"NCCL_IB_HCA": None}),
    "gb200-tray-no-hca-rail-down": gb200_tray(env={"NCCL_IB_HCA": None}, state={1: ("1: DOWN", "2: Polling")},
                                              rate={1: "10 Gb/sec (4X SDR)"}),
    "grace-gdr-level-pxb-nccl-2-29": gb200_tray(env={"NCCL_NET_GDR_LEVEL": "PXB"}, nccl_lib=f"{AARCH64_LIB}.2.29.2"),
    "grace-gdr-level-pxb-nccl-2-28": gb200_tray(env={"NCCL_NET_GDR_LEVEL": "PXB"}, nccl_lib=f"{AARCH64_LIB}.2.28.9"),
    "hgx-gds-storage-hcas": hgx_gds(),
    "hgx-gds-hca-leaves-out-rail": hgx_gds(env={"NCCL_IB_HCA": "=" + ",".join(f"mlx5_{i}" for i in range(8) if i != 3)}),
    "nccl-2-30-hca-rail-grammar": N.Node("ib", nccl_lib="/usr/lib/x86_64-linux-gnu/libnccl.so.2.30.7",
                                         env={"NCCL_IB_HCA": "=" + ",".join(f"mlx5_{i}:1:{i}:0" for i in range(8))}),
    "ib-timeout-18-nccl-2-21": N.Node("ib", env={"NCCL_IB_TIMEOUT": "18"}),
    "ib-timeout-18-nccl-2-23": N.Node("ib", env={"NCCL_IB_TIMEOUT": "18"},
                                      nccl_lib="/usr/lib/x86_64-linux-gnu/libnccl.so.2.23.4"),
    "gdr-level-pix-on-pxb": N.Node("ib", topo=T.topo_pxb(), switch_name=MICROCHIP_SWITCH,
                                   env={"NCCL_NET_GDR_LEVEL": "PIX"}),
    # the job's view (issue 26 item 1): its netns, /dev/infiniband, libibverbs.d, memlock
    "k8s-pod-own-eth0": N.Node("ib", **POD),
    "k8s-pod-no-rdma-resource": N.Node("ib", job_uverbs=False, **POD),
    # issue 26 gap 3: a Multus secondary interface (net1) with no IPAM and IPv6 off: NCCL_SOCKET_IFNAME=net1
    # names an interface of the pod that has no address, which NCCL skips (src/misc/socket.cc)
    "k8s-pod-ifname-no-address": N.Node("ib", job_ifaces=("lo", "eth0", "net1"), job_addressed=("eth0",),
                                        env={"NCCL_SOCKET_IFNAME": "net1"}),
    "k8s-pod-own-eth0-addressed": N.Node("ib", job_ifaces=("lo", "eth0"), job_addressed=("eth0",),
                                         env={"NCCL_SOCKET_IFNAME": "eth0"}),
    "job-image-no-driver-file": N.Node("ib", libibverbs_d=(), verbs_loaded=False),
    "bnxt-renamed-mlx5-image": N.Node("roce", **BNXT_RENAMED, job_providers=("mlx5",)),
    "bnxt-renamed-healthy": N.Node("roce", **BNXT_RENAMED),
    "job-memlock-64k": N.Node("ib", job_memlock="65536"),
    # issue 26 gap 2: docker's default CapEff plus CAP_IPC_LOCK (bit 14: a80425fb | 4000), 64 KiB memlock;
    # in the initial user namespace the capability lifts the limit, in a rootless one (uid_map
    # 0 -> 1000, then a subuid range) it does not (kernel/capability.c capable: init_user_ns)
    "job-cap-ipc-lock-64k": N.Node("ib", job_memlock="65536", job_capeff="00000000a80465fb"),
    "job-userns-cap-ipc-lock-64k": N.Node("ib", job_memlock="65536", job_capeff="00000000a80465fb",
                                          job_uid_map="         0       1000          1\n         1     100000      65536\n"),
}


def main(names: list[str]) -> int:
    SCENARIOS_DIR.mkdir(parents=True, exist_ok=True)
    for name in names or sorted(SCENARIOS):
        folder = SCENARIOS_DIR / name
        folder.mkdir(exist_ok=True)
        record(SCENARIOS[name], folder / "bundle.tar.gz")
        print(f"wrote {folder / 'bundle.tar.gz'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
