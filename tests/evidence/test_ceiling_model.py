"""ceiling.py: the ceiling per algorithm for a topology, the resource that caps it, and what decides a part the
evidence does not show (hardware/ceilings.yaml's figures: NCCL's src/graph/topo.h, the vendors' datasheets,
NVLS's published figure)."""

from __future__ import annotations

from allreduce_doctor.ceiling import Topology, ceilings, judge


def test_8x_h100_sxm_nvls_is_the_ceiling_and_the_ring_is_nccls_link_figure():
    result = ceilings(Topology(gpu_model="H100-SXM", gpus_per_node=8))
    by_algo = {c.algo: c for c in result.ceilings}
    assert (by_algo["ring"].gbs, by_algo["ring"].bound_gbs) == (370.8, 450.0)  # 18 x 20.6 (topo.h), 18 x 25
    assert (by_algo["nvls"].gbs, by_algo["nvls"].bound_gbs) == (480.0, 787.5)  # published; 2*7/8 x 450
    assert result.best.resource == "NVLink (NVLS)" and result.unknown == []


def test_nccl_algo_ring_or_nvls_off_leaves_the_rings_figure():
    for topo in (Topology(gpu_model="H100-SXM", gpus_per_node=8, algos=frozenset({"ring"})),
                 Topology(gpu_model="H100-SXM", gpus_per_node=8, nvls_enabled=False)):
        result = ceilings(topo)
        assert [(c.algo, c.gbs) for c in result.ceilings] == [("ring", 370.8)]
        assert judge(360.0, result)["verdict"] == "at_limit"


def test_the_verdicts():
    result = ceilings(Topology(gpu_model="H100-SXM", gpus_per_node=8))
    assert judge(468.0, result) | {} == {"verdict": "at_limit", "ratio": 0.975, "ceiling_gbs": 480.0,
                                         "bound_gbs": 787.5, "resource": "NVLink (NVLS)"}
    assert judge(120.0, result)["verdict"] == "below" and judge(120.0, result)["ratio"] == 0.25
    assert judge(407.0, result)["verdict"] == "below" and judge(408.0, result)["verdict"] == "at_limit"  # 0.85
    assert judge(900.0, result)["verdict"] == "above_hardware"  # past 1.05 x 787.5


def test_nvls_with_no_published_figure_is_bounded_not_expected():
    result = ceilings(Topology(gpu_model="B200", gpus_per_node=8))
    assert result.best.gbs == 721.8 and result.bound_gbs == 1575.0  # 18 x 40.1; 2*7/8 x 900
    assert judge(830.0, result)["verdict"] == "at_limit"  # NVIDIA/nccl#1807's 830: above the ring, within the bound


def test_an_unknown_part_is_asked_for_never_guessed():
    assert "--answer gpu_model=H100-SXM" in ceilings(Topology(gpus_per_node=8)).unknown[0]
    two = ceilings(Topology(gpu_model="A100-SXM4", gpus_per_node=2))  # an 8-GPU HGX board, or the 4-GPU one?
    assert two.best is None and "--answer nvswitch=yes" in two.unknown[0]
    answered = ceilings(Topology(gpu_model="A100-SXM4", gpus_per_node=2, nvswitch=True))
    assert answered.best.gbs == 240.0  # 12 x 20.0 (SM80_NVLINK_BW)
    pair = ceilings(Topology(gpu_model="H100-PCIe", gpus_per_node=2))
    assert pair.best is None and "--answer nvlink_links=" in pair.unknown[0]
    assert judge(100.0, pair)["verdict"] == "unknown"


def test_pcie_cards_without_nvlink_are_bounded_by_their_pcie_link_and_not_judged_below_it():
    # Past the GPU's own link the CPU and memory decide (sjeaugey, NVIDIA/nccl#1639): a bound, no reachable figure.
    result = ceilings(Topology(gpu_model="H100-PCIe", gpus_per_node=4))
    assert result.best is None and result.bound_gbs == 63.0 and result.ceilings[0].resource == "PCIe"  # Gen5 x16
    assert judge(19.3, result) == {"verdict": "unknown", "ratio": None, "ceiling_gbs": None, "bound_gbs": 63.0,
                                   "resource": "PCIe"}
    assert judge(70.0, result)["verdict"] == "above_hardware"
    assert ceilings(Topology(gpu_model="H100-PCIe", gpus_per_node=4, pcie_gen=4)).bound_gbs == 31.5
    assert ceilings(Topology(gpu_model="A100-PCIe", gpus_per_node=2, nvlink_links=12)).best.gbs == 240.0


def test_a_down_link_lowers_the_ceiling():
    result = ceilings(Topology(gpu_model="H100-SXM", gpus_per_node=8, nvlink_links=16, algos=frozenset({"ring"})))
    assert result.best.gbs == 329.6  # 16 x 20.6


def test_two_nodes_the_nics_bound_the_ring_and_the_tree_reports_up_to_twice():
    result = ceilings(Topology(gpu_model="H100-SXM", gpus_per_node=8, nodes=2, nics=8, nic_gbps=400))
    assert [(c.algo, c.gbs, c.bound_gbs) for c in result.ceilings] == [("ring", 400.0, 400.0), ("tree", None, 800.0)]
    assert ceilings(Topology(gpu_model="H100-SXM", gpus_per_node=8, nodes=4)).unknown[0].startswith("the NICs per node")
