"""Pasted tool output: recognized block by block, read by the project's parsers, and turned into
the same node facts the probes produce (shape checked against the parser's own output)."""

from __future__ import annotations

import pytest

from allreduce_doctor.parsers import parse
from tests.evidence.helpers import OUTPUTS, facts, fixture_body, observations

NODE_FACTS = [
    ("ibstat-mixed-ib-eth-a100.txt", "tools.ibstat", "ibstat"),
    ("ibstat-roce-h100-some-down-polling.txt", "tools.ibstat", "ibstat"),
    ("ibv_devinfo-vv-connectx6dx-roce-bond.txt", "tools.ibv_devinfo", "ibv_devinfo"),
    ("ibv_devinfo-v-softroce-rxe-mtu1024.txt", "tools.ibv_devinfo", "ibv_devinfo"),
    ("show_gids-roce-connectx6-ipv4.txt", "tools.show_gids", "show_gids"),
    ("show_gids-empty-in-container.txt", "tools.show_gids", "show_gids"),
    ("lspci-vvv-bridge-acs-redirect-on.txt", "pci.lspci", "lspci_vvv"),
    ("lspci-vvv-mlx5-cx7-gen5-x16-ok.txt", "pci.lspci", "lspci_vvv"),
    ("nvidia-smi-topo-m-h100-8gpu-8nic.txt", "gpu.topo", "nvidia_smi_topo"),
    ("nvidia-smi-nvlink-s-a100-8gpu.txt", "gpu.nvlink", "nvidia_smi_nvlink"),
    ("nvidia-smi-nvlink-s-all-inactive.txt", "gpu.nvlink", "nvidia_smi_nvlink"),
    ("nvidia-smi-q-h100-sxm-fabric-completed.txt", "gpu.fabric", "nvidia_smi_fabric"),
    ("proc-cmdline-iommu-pt.txt", "kernel.cmdline", "proc_cmdline"),
    ("syslog-ib-link-flapping.txt", "kernel.dmesg", "dmesg_lines"),
]


@pytest.mark.parametrize("name,fact,parser", NODE_FACTS)
def test_pasted_output_becomes_the_node_fact(tmp_path, name, fact, parser):
    body = fixture_body(OUTPUTS / name)
    text = "Here is the output from the node, as asked:\n\n" + body + "\nThanks for looking!\n"
    obs = observations(tmp_path, text)[fact]
    assert obs.status == "ok"
    assert obs.value == parse(parser, body)
    lines = body.splitlines()
    first = 3 + next(i for i, line in enumerate(lines) if line.strip())
    last = 3 + max(i for i, line in enumerate(lines) if line.strip())
    assert obs.source == f"{tmp_path}/paste.txt:{first}-{last}" if first != last else f"{tmp_path}/paste.txt:{first}"


def test_two_tools_one_after_the_other(tmp_path):
    ibstat = fixture_body(OUTPUTS / "ibstat-mixed-ib-eth-a100.txt")
    gids = fixture_body(OUTPUTS / "show_gids-roce-connectx6-ipv4.txt")
    text = "$ ibstat\n" + ibstat + "$ show_gids\n" + gids
    result = observations(tmp_path, text)
    assert result["tools.ibstat"].value == parse("ibstat", ibstat)
    assert result["tools.show_gids"].value == parse("show_gids", gids)


def test_ports_from_ibstatus(tmp_path):
    rdma = facts(tmp_path, fixture_body(OUTPUTS / "ibstatus-hdr-a100-active.txt"))["log.rdma"]
    assert rdma["fabric"] == "ib"
    assert len(rdma["ports"]) == 9
    port = rdma["ports"][0]
    assert {k: port[k] for k in ("name", "state", "rate_gbps", "width", "speed", "link_layer", "sm_lid")} == \
        {"name": "mlx5_0/1", "state": "ACTIVE", "rate_gbps": 200.0, "width": 4, "speed": "HDR",
         "link_layer": "InfiniBand", "sm_lid": 1}


def test_an_active_port_without_lid_is_ethernet(tmp_path):
    text = ("Infiniband device 'mlx5_3' port 1 status:\n        default gid:     fe80::1\n        base lid:        0x0\n"
            "        sm lid:          0x0\n        state:           4: ACTIVE\n        phys state:      5: LinkUp\n"
            "        rate:            40 Gb/sec (4\n")
    port = facts(tmp_path, text)["log.rdma"]["ports"][0]
    assert (port["link_layer"], port["layer_inferred"], port["rate_gbps"]) == ("Ethernet", True, None)


def test_gid_fragment_of_ibv_devinfo(tmp_path):
    text = ("_ibv_devinfo -d mlx5_bond_0 -v_\n\n\t\t\tphys_state:\t\tLINK_UP (5)\n"
            "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0ac0:ebff:feda:1cfb, RoCE v1\n"
            "\t\t\tGID[  1]:\t\tfe80::ac0:ebff:feda:1cfb, RoCE v2\n"
            "\t\t\tGID[  3]:\t\t::ffff:200.0.209.6, RoCE v2\n")
    f = facts(tmp_path, text)
    gids = [(g["index"], g["kind"], g["version"], g["ipv4"]) for g in f["log.rdma"]["gids"]]
    assert gids == [(0, "link_local", 1, None), (1, "link_local", 2, None), (3, "ipv4", 2, "200.0.209.6")]
    assert f["log.rdma"]["fabric"] == "roce"
    assert "tools.ibv_devinfo" not in observations(tmp_path, text)  # a fragment is not the node's whole output


def test_acs_lines_grepped_out_of_lspci(tmp_path):
    text = ("lspci | grep -i plx | awk '{print $1}' | xargs -I {} lspci -s {} -vvv | grep -i acsctl\n\n"
            "ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n")
    host = facts(tmp_path, text)["log.host"]
    assert host["acs_redirect"] is True
    assert host["acs"][0]["flags"] == {"SrcValid": True, "TransBlk": False, "ReqRedir": True, "CmpltRedir": True,
                                       "UpstreamFwd": True, "EgressCtrl": False, "DirectTrans": False}
    assert host["acs"][0]["source"] == f"{tmp_path}/paste.txt:3"


def _nic_paths(tmp_path, text: str):
    """gpu.nic_paths of a pasted topology, derived as on a node whose machine type (DMI) was not read."""
    from allreduce_doctor.observations import MISSING, Observation
    from allreduce_doctor.probes.derive_topo import gpu_nic_paths

    return gpu_nic_paths({"gpu.topo": observations(tmp_path, text)["gpu.topo"],
                          "node.dmi": Observation("node.dmi", None, MISSING)})


def test_flattened_vm_topology(tmp_path):
    """Every GPU-GPU path PHB, each GPU on two NUMA nodes, no NIC shown: the node's own rule calls it a VM's
    flattened view (log.host.topology describes the table, it judges nothing)."""
    header = "        GPU0    GPU1    GPU2    CPU Affinity    NUMA Affinity\n"
    rows = "".join(f"GPU{i}    " + "    ".join("X" if j == i else "PHB" for j in range(3)) + "    0-191   0-1\n"
                   for i in range(3))
    topo = facts(tmp_path, header + rows)["log.host"]["topology"]
    assert (topo["gpus"], topo["paths"]) == (3, {"PHB": 6})
    found = _nic_paths(tmp_path, header + rows)
    assert (found.status, found.value) == ("ok", {"gpus": [], "all_phb": True, "virtual": True, "from": "GPU-GPU paths"})


def test_bare_metal_topology_is_not_flattened(tmp_path):
    found = _nic_paths(tmp_path, fixture_body(OUTPUTS / "nvidia-smi-topo-m-h100-8gpu-8nic.txt"))
    assert (found.value["all_phb"], found.value["virtual"], len(found.value["gpus"])) == (False, None, 8)


def test_cmdline_iommu(tmp_path):
    """A pasted command line is the node's kernel.cmdline, which the trunk's IOMMU check reads."""
    found = facts(tmp_path, "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro intel_iommu=on quiet\n")
    cmdline = found["kernel.cmdline"]
    assert (cmdline["iommu"], cmdline["iommu_passthrough"]) == ("on", False)
    assert "iommu_translating" not in found["log.host"]  # the node's kernel.iommu_mode judges it (trunk.iommu)
    cmdline = facts(tmp_path, 'GRUB_CMDLINE_LINUX="intel_iommu=on iommu=pt"\n')["kernel.cmdline"]
    assert (cmdline["iommu"], cmdline["iommu_passthrough"]) == ("pt", True)


def test_mlnx_qos_keeps_the_interface_named_by_the_command(tmp_path):
    qos = facts(tmp_path, fixture_body(OUTPUTS / "mlnx_qos-dscp-trust-pfc.txt"))["log.rdma"]["qos"]
    assert qos[0]["iface"] == "eth2" and qos[0]["trust"] == "dscp"
