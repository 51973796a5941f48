"""The inter-node ceiling (ceiling.inter_node, docs/ceilings.md "Across nodes"): NICs per node x the lower of the
line rate and each NIC's PCIe link, the node's own links as the other bound, the tree's 2x on exactly two nodes,
host staging named, and what is not known said with the answer that decides it."""

from __future__ import annotations

from allreduce_doctor.ceiling import Topology, ceilings, judge

RING = frozenset({"ring"})


def test_a_gen4_x16_slot_cannot_carry_a_400g_port():
    topo = Topology(gpu_model="H100-SXM", gpus_per_node=8, nodes=4, nics=4, nic_gbps=400, nic_pcie_gen=4,
                    nic_pcie_width=16)
    best = ceilings(topo).best
    assert (best.resource, best.gbs) == ("NICs", 126.0)  # 4 x 31.5, not 4 x 50
    assert best.basis == "4 NICs per node x 400 Gb/s ports each capped by their PCIe Gen4 x16 link (31.5 GB/s each way)"
    assert "pcie_spec" in best.sources
    assert ceilings(Topology(gpu_model="H100-SXM", gpus_per_node=8, nodes=4, nics=4, nic_gbps=400,
                             nic_pcie_gen=5)).best.gbs == 200.0  # Gen5 x16 (63) carries 50


def test_the_nodes_own_links_are_the_other_bound():
    # 8x 400G on H100 with the ring: NVLink's 18 x 20.6 = 370.8 caps it below the NICs' 400
    best = ceilings(Topology(gpu_model="H100-SXM", gpus_per_node=8, nodes=4, nics=8, nic_gbps=400, algos=RING)).best
    assert (best.resource, best.gbs) == ("NVLink", 370.8) and best.basis.endswith("below the NICs' 400 GB/s")
    # 8x 200G on A100: the NICs (200) are below NVLink (240)
    assert ceilings(Topology(gpu_model="A100-SXM4", gpus_per_node=8, nodes=4, nics=8, nic_gbps=200)).best.gbs == 200.0


def test_published_dgx_a100_192_is_at_the_limit_and_half_of_it_is_below():
    result = ceilings(Topology(gpu_model="A100-SXM4", gpus_per_node=8, nodes=4, nics=8, nic_gbps=200))
    assert judge(192.0, result)["verdict"] == "at_limit"  # AddyLaddy, NVIDIA/nccl#812
    assert judge(96.0, result) == {"verdict": "below", "ratio": 0.48, "ceiling_gbs": 200.0, "bound_gbs": 200.0,
                                   "resource": "NICs"}
    assert judge(230.0, result)["verdict"] == "above_hardware"  # past the NICs beyond two nodes


def test_two_nodes_the_tree_reports_up_to_twice_and_past_that_cannot_be():
    result = ceilings(Topology(gpu_model="A100-SXM4", gpus_per_node=8, nodes=2, nics=8, nic_gbps=200))
    assert judge(230.0, result)["verdict"] == "at_limit" and result.bound_gbs == 400.0
    assert judge(430.0, result)["verdict"] == "above_hardware"
    ring_only = ceilings(Topology(gpu_model="A100-SXM4", gpus_per_node=8, nodes=2, nics=8, nic_gbps=200, algos=RING))
    assert judge(230.0, ring_only)["verdict"] == "above_hardware"


def test_host_staging_is_named_in_the_resource():
    best = ceilings(Topology(gpu_model="A100-SXM4", gpus_per_node=8, nodes=4, nics=1, nic_gbps=200, gdr=False)).best
    assert (best.resource, best.gbs) == ("NICs (host staging)", 25.0)
    assert best.basis.endswith("no GPUDirect RDMA: staged through host memory")


def test_unknown_nics_say_which_answer_decides():
    result = ceilings(Topology(gpu_model="A100-SXM4", gpus_per_node=8, nodes=4))
    assert result.best is None and result.unknown == [
        "the NICs per node and their rate: paste `ibstat` of a node or NCCL_DEBUG=INFO `NET/IB : Using` lines, "
        "or answer --answer nics_per_node=8 --answer nic_rate_gbps=400"]
    # the GPU model unknown: the NICs still bound it, and what would tell the node's links is said
    result = ceilings(Topology(gpus_per_node=8, nodes=4, nics=8, nic_gbps=200))
    assert result.best.gbs == 200.0 and result.unknown[0].startswith("the GPU model")
