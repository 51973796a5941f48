import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse


def test_topo_h100_rail_optimised(fixture_text):
    topo = parse("nvidia_smi_topo", fixture_text("nvidia-smi-topo-m-h100-8gpu-8nic.txt"))
    assert topo["devices"] == [f"GPU{i}" for i in range(8)] + [f"NIC{i}" for i in range(8)]
    assert topo["matrix"]["GPU0"]["NIC0"] == "PIX"
    assert topo["matrix"]["GPU0"]["GPU1"] == "NV18"
    assert topo["matrix"]["GPU0"]["NIC4"] == "SYS"
    assert topo["matrix"]["NIC7"]["GPU7"] == "PIX"
    assert "GPU0" not in topo["matrix"]["GPU0"]
    # every GPU has exactly one PIX NIC, the one with its own number
    for i in range(8):
        pix = [col for col, cell in topo["matrix"][f"GPU{i}"].items() if cell == "PIX"]
        assert pix == [f"NIC{i}"]
    assert topo["cpu_affinity"]["GPU0"] == "0-47,96-143"
    assert topo["cpu_affinity"]["GPU7"] == "48-95,144-191"
    assert topo["numa_affinity"] == {f"GPU{i}": "0" if i < 4 else "1" for i in range(8)}
    assert topo["nic_legend"] == {f"NIC{i}": f"mlx5_{i}" for i in range(8)}


def test_topo_old_driver_names_nics_directly():
    text = (
        "\tGPU0\tGPU1\tmlx5_0\tCPU Affinity\n"
        "GPU0\t X \tNV1\tPHB\t0-19\n"
        "GPU1\tNV1\t X \tPHB\t0-19\n"
        "mlx5_0\tPHB\tPHB\t X \t\n"
    )
    topo = parse("nvidia_smi_topo", text)
    assert topo["devices"] == ["GPU0", "GPU1", "mlx5_0"]
    assert topo["matrix"]["GPU1"]["mlx5_0"] == "PHB"
    assert topo["cpu_affinity"] == {"GPU0": "0-19", "GPU1": "0-19"}
    assert topo["nic_legend"] == {}


def test_nvlink_a100_healthy(fixture_text):
    nvlink = parse("nvidia_smi_nvlink", fixture_text("nvidia-smi-nvlink-s-a100-8gpu.txt"))
    assert sorted(nvlink["gpus"], key=int) == [str(i) for i in range(8)]
    gpu0 = nvlink["gpus"]["0"]
    assert gpu0["name"] == "NVIDIA A100-SXM4-80GB"
    assert gpu0["uuid"] == "GPU-5269b708-678a-b1a8-60f0-c90406537486"
    assert gpu0["links"] == {str(i): 25.0 for i in range(12)}
    assert nvlink["all_inactive"] is False


def test_nvlink_all_inactive(fixture_text):
    nvlink = parse("nvidia_smi_nvlink", fixture_text("nvidia-smi-nvlink-s-all-inactive.txt"))
    assert nvlink == {
        "gpus": {"6": {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-9667d95e-6d22-0c22-1f57-c481f13e7c44", "links": {}}},
        "all_inactive": True,
    }


def test_nvlink_inactive_links_are_none():
    text = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
    nvlink = parse("nvidia_smi_nvlink", text)
    assert nvlink["gpus"]["0"]["links"] == {"0": 26.562, "1": None}
    assert nvlink["all_inactive"] is False


def test_fabric_completed(fixture_text):
    fabric = parse("nvidia_smi_fabric", fixture_text("nvidia-smi-q-h100-sxm-fabric-completed.txt"))
    assert fabric == {
        "gpus": [
            {
                "bus_id": "00000000:18:00.0",
                "state": "Completed",
                "status": "Success",
                "clique_id": "0",
                "cluster_uuid": "00000000-0000-0000-0000-000000000000",
                "health": {"bandwidth": None},
            }
        ],
        "names": ["NVIDIA H100 80GB HBM3"],
    }


def test_fabric_not_applicable_on_pcie_cards(fixture_text):
    fabric = parse("nvidia_smi_fabric", fixture_text("nvidia-smi-q-h100nvl-fabric-na.txt"))
    assert [g["bus_id"] for g in fabric["gpus"]] == ["00000000:AD:00.0", "00000000:AE:00.0"]
    assert {(g["state"], g["status"]) for g in fabric["gpus"]} == {(None, None)}


def test_fabric_not_applicable_on_a_one_gpu_vm(fixture_text):
    # driver 580 prints the Fabric block with its Health sub-block, all N/A, for a GPU passed into a VM
    fabric = parse("nvidia_smi_fabric", fixture_text("nvidia-smi-q-h200-vm.txt"))
    assert fabric["names"] == ["NVIDIA H200"]
    assert [g["bus_id"] for g in fabric["gpus"]] == ["00000000:00:06.0"]
    gpu = fabric["gpus"][0]
    assert (gpu["state"], gpu["status"], gpu["clique_id"]) == (None, None, None)
    assert set(gpu["health"].values()) == {None}


def test_fabric_section_absent_on_old_driver():
    text = "GPU 00000000:07:00.0\n    Product Name                          : NVIDIA A100-SXM4-40GB\n    Processes                             : None\n"
    assert parse("nvidia_smi_fabric", text) == {"gpus": [], "names": ["NVIDIA A100-SXM4-40GB"]}


def test_fabric_health_and_flattened_copy():
    text = (
        "GPU 00000000:01:00.0\nProduct Name : NVIDIA GB200\nFabric\nState : In Progress\nStatus : N/A\n"
        "CliqueId : 1\nHealth\nSummary : Healthy\nBandwidth : Full\nProcesses : None\nClocks\nState : other\n"
    )
    [gpu] = parse("nvidia_smi_fabric", text)["gpus"]
    assert (gpu["state"], gpu["status"], gpu["clique_id"]) == ("In Progress", None, "1")
    assert gpu["health"] == {"summary": "Healthy", "bandwidth": "Full"}


@pytest.mark.parametrize("name", ["nvidia_smi_topo", "nvidia_smi_nvlink", "nvidia_smi_fabric"])
@pytest.mark.parametrize("text", ["", "\n \n", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"])
def test_empty_or_garbled(name, text):
    with pytest.raises(ParseError):
        parse(name, text)
