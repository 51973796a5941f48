"""A launcher line gives the scale (issue 12, dev11): the node count a launcher's own flags give (torchrun
--nnodes, srun -N/--nodes, mpirun -H/--host/--hostfile, deepspeed --num_nodes/--hostfile) is the report's scale,
so a hang of an NCCL job launched on two nodes gets the multi-node candidates, and one launched on one node the
one-node ones. Only on a text whose words describe NCCL trouble (the existing gate); the candidates stay low.
The texts are written here in the shapes reporters paste (a title, the command line, what they saw)."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import NOTHING, EvidenceError
from tests.evidence.helpers import diagnose_json, facts

ACROSS = "the job fails across nodes, or works only on one node, one worker or one GPU"
MULTI = ["wrong_socket_ifname", "socket_blocked"]
ONE = ["pcie_acs_enabled", "iommu_enabled"]  # the job hangs on one node (report_words.yaml hang_on_one_node)


def _scale(tmp_path, text: str) -> dict:
    return facts(tmp_path, text)["log.job"]["report"]["scale"]


def _causes(data: dict) -> list[str]:
    return [f["cause"] for f in data["findings"]]


def test_a_torchrun_line_on_two_nodes_under_an_nccl_hang_gets_the_multi_node_candidates(tmp_path):
    text = ("Training with the NCCL backend hangs\n"
            "$ torchrun --nnodes=2 --nproc_per_node=8 --rdzv_backend=c10d --rdzv_endpoint=10.0.0.1:29500 train.py\n"
            "It is stuck at the first step and never returns.\n")
    _rc, d, path = diagnose_json(tmp_path, text)
    assert [(f["cause"], f["confidence"], f["node"]) for f in d["findings"]] == [
        ("wrong_socket_ifname", "low", "evidence.report_words"), ("socket_blocked", "low", "evidence.report_words")]
    assert d["findings"][0]["supporting"] == [
        f"from the report's words only: no NCCL output line ({ACROSS})",
        f'{path}:1: "Training with the NCCL backend hangs"',
        f'{path}:2: "$ torchrun --nnodes=2 --nproc_per_node=8 --rdzv_backend=c10d --rdzv_endpoint=10.0.0.1:29500 '
        'train.py"']


def test_a_title_whose_hang_names_no_nccl_word_counts_beside_the_next_line_and_the_launcher(tmp_path):
    text = ("DDP job stuck after a few steps\n"
            "We use the NCCL backend.\n"
            "NCCL_DEBUG=INFO torchrun --nnodes 2 --nproc_per_node 4 --master_addr node-a --master_port 29500 train.py\n")
    _rc, d, path = diagnose_json(tmp_path, text)
    assert _causes(d) == MULTI
    assert d["findings"][0]["supporting"][2] == (
        f'{path}:3: "NCCL_DEBUG=INFO torchrun --nnodes 2 --nproc_per_node 4 --master_addr node-a --master_port 29500 '
        'train.py"')


def test_a_command_continued_over_lines_gives_its_count_where_the_flag_stands(tmp_path):
    text = ("NCCL all_reduce hangs at init\n"
            "torchrun \\\n"
            "    --nproc_per_node=8 \\\n"
            "    --nnodes=4 \\\n"
            "    --rdzv_endpoint=$MASTER:29400 train.py\n")
    assert _scale(tmp_path, text) == {"multi_node": {"source": f"{tmp_path / 'paste.txt'}:4",
                                                     "quote": '"--nnodes=4 \\"'}}
    _rc, d, _path = diagnose_json(tmp_path, text)
    assert _causes(d) == MULTI


@pytest.mark.parametrize(("command", "scale"), [
    ("srun -N 4 --gpus-per-node=8 python train.py", "multi_node"),
    ("srun -N2 --ntasks-per-node=8 ./all_reduce_perf -b 8 -e 8G -f 2 -g 1", "multi_node"),
    ("srun --nodes=2-4 python train.py", "multi_node"),
    ("srun --nodes=1 --ntasks-per-node=8 ./all_reduce_perf -b 8 -e 8G -g 1", "one_node"),
    ("mpirun -np 16 -H node-a:8,node-b:8 -x NCCL_DEBUG=INFO ./all_reduce_perf -b 8 -e 8G -f 2 -g 1", "multi_node"),
    ("mpirun --allow-run-as-root -np 8 --host localhost:8 ./all_reduce_perf -b 8 -e 1G -g 1", "one_node"),
    ("mpirun -np 16 --hostfile hosts.txt ./all_reduce_perf -b 8 -e 8G -f 2 -g 1", "multi_node"),
    ("deepspeed --hostfile=/job/hostfile train.py --deepspeed ds_config.json", "multi_node"),
    ("deepspeed --num_nodes=1 --num_gpus=8 --hostfile hostfile train.py", "one_node"),
    ("torchrun --standalone --nproc_per_node=8 train.py", "one_node"),
    ("python -m torch.distributed.run --nnodes=2 --nproc_per_node=8 train.py", "multi_node"),
])
def test_each_launchers_own_flags_give_the_scale(tmp_path, command, scale):
    assert list(_scale(tmp_path, f"NCCL all_reduce hangs\n{command}\n")) == [scale]


@pytest.mark.parametrize("command", [
    "torchrun --nnodes=1:4 --nproc_per_node=8 train.py",  # elastic: one node or more
    "mpirun -np 16 ./all_reduce_perf -b 8 -e 8G -g 1",  # no host list: a rank count says nothing of the nodes
    "mpirun -N 8 ./all_reduce_perf -b 8 -e 8G -g 1",  # Open MPI's -N is processes per node, not nodes
    "python train.py --nnodes=2",  # not a launcher
])
def test_flags_that_give_no_node_count_give_no_scale(tmp_path, command):
    assert _scale(tmp_path, f"NCCL all_reduce hangs\n{command}\n") == {}


def test_a_hang_launched_on_one_node_gets_the_one_node_candidates(tmp_path):
    text = "all_reduce_perf hangs with NCCL 2.19\nmpirun -np 8 -H gpu-a:8 ./all_reduce_perf -b 8 -e 8G -f 2 -g 1\n"
    _rc, d, _path = diagnose_json(tmp_path, text)
    assert _causes(d) == ONE and {f["confidence"] for f in d["findings"]} == {"low"}


def test_without_an_nccl_word_a_launcher_and_a_hang_name_no_candidate(tmp_path):
    # The gate: words count only on a text that names NCCL or a collective; the command line alone is read.
    text = "the program is hanging on two machines\ntorchrun --nnodes=2 --nproc_per_node=2 main.py\n"
    assert "report" not in facts(tmp_path, text)["log.job"]
    _rc, d, _path = diagnose_json(tmp_path, text)
    assert d["findings"] == [] and d["verdict"] == "inconclusive"
    assert d["inconclusive"][-1]["reason"].startswith("nothing in this text points at a cause")
    with pytest.raises(EvidenceError) as err:  # and the same words without the command line are refused
        facts(tmp_path, "the program is hanging on two machines\n")
    assert NOTHING in str(err.value)
