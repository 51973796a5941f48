"""A launcher's own flags give the job's node and per-node counts as that launcher means them: Open MPI's
mpirun -N is processes per node (mpirun(1): "-N <num>: launch num processes per node on all allocated
nodes"), Slurm's srun -N the node count, deepspeed's --num_nodes the node count."""

from __future__ import annotations

import pytest

from tests.evidence.helpers import facts


@pytest.mark.parametrize(("line", "launch"), [
    ("mpirun -N 8 -np 16 -H a,b ./build/all_reduce_perf -b 8 -e 1G",
     {"np": 16, "per_node": 8, "hosts": ["a", "b"], "test": "all_reduce"}),
    ("/opt/openmpi/bin/mpiexec -N 4 ./all_gather_perf", {"per_node": 4, "test": "all_gather"}),
    ("srun -N 4 --ntasks-per-node=8 ./all_reduce_perf", {"nodes": 4, "per_node": 8, "test": "all_reduce"}),
    ("deepspeed --num_nodes 2 --num_gpus 8 train.py", {"nodes": 2}),
    ("torchrun --nnodes=2 --nproc_per_node=8 train.py", {"nodes": 2, "per_node": 8}),
])
def test_each_launcher_counts_as_it_means(tmp_path, line, launch):
    got = facts(tmp_path, line + "\n")["log.env"]["launch"]
    assert got == launch | {"source": f"{tmp_path}/paste.txt:1"}
