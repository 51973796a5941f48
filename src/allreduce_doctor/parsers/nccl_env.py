"""The grammar of environment lines in a paste: `export NCCL_X=v`, `NCCL_X=v cmd`, launcher flags
(mpirun -x, srun --export, mpiexec -genv), docker -e, Kubernetes env entries, Python os.environ,
and NCCL's own `NCCL_X set by environment to v.` (src/include/param.h, v2.4.8-1 to v2.21.5-1).
No verdicts: evidence/env.py reads them.
"""

from __future__ import annotations

import re

VALUE = r"""("[^"]*"|'[^']*'|[^\s;&|#`]+)"""
# A shell prompt that names its host: `root@gpu01:~# `, `[user@gpu01 ~]$ `, `user@host:~/dir$ `, after the
# `(NAME) ` an active Python venv or conda environment puts before it (CPython Lib/venv/scripts/common/activate:
# PS1="(${VIRTUAL_ENV_PROMPT}) ${PS1:-}"; conda docs, "Activating an environment": the prompt shows `(myenv)`).
HOST_PROMPT = r"(?:\([\w.-]+\)\s*)?\[?[\w.-]+@(?P<prompt_host>[\w.-]+)(?::[^\s$#]*|\s[^\]$#]*)?\]?\s*[$#]\s*"
PROMPT_RE = re.compile(rf"^\s*(?:{HOST_PROMPT}|[\w.@-]*[$#>]\s+|\$\s*)?(?:sudo\s+(?:-E\s+)?)?")
LEAD_RE = re.compile(rf"^(?:export\s+|set\s+|ENV\s+|env\s+)?(NCCL_[A-Z0-9_]+)={VALUE}")
SPACED_RE = re.compile(rf"^(?:setenv|ENV)\s+(NCCL_[A-Z0-9_]+)\s+{VALUE}")
CHAIN_RE = re.compile(rf"^(NCCL_[A-Z0-9_]+)={VALUE}\s*")
FLAG_RE = re.compile(rf"(?:^|\s)(?:-x|--env|-e)\s*(NCCL_[A-Z0-9_]+)(?:={VALUE})?")
GENV_RE = re.compile(rf"(?:^|\s)-genv\s+(NCCL_[A-Z0-9_]+)\s+{VALUE}")
EXPORT_LIST_RE = re.compile(r"--export[=\s]\S*")
PYENV_RE = re.compile(r"""environ(?:\[|\.setdefault\(|\.update\(\{?)\s*["'](NCCL_[A-Z0-9_]+)["']\s*[\],:]?\s*=?\s*["']([^"']*)["']""")
REPORTED_RE = re.compile(r"(NCCL_[A-Z0-9_]+) set (?:by environment )?to (\S+?)\.?\s*$")
CONTAINER_RE = re.compile(r"^(?:\S*/)?(?:docker|podman|nerdctl)\s+(?:container\s+)?run\b")
K8S_NAME_RE = re.compile(r"^\s*-?\s*name:\s*[\"']?(NCCL_[A-Z0-9_]+)[\"']?\s*$")
K8S_VALUE_RE = re.compile(r"""^\s*value:\s*["']?([^"'\s]*)["']?\s*$""")
YAML_MAP_RE = re.compile(r"""^\s*(NCCL_[A-Z0-9_]+):\s*["']?([^"'\s#]+)["']?\s*$""")
LAUNCH_RE = re.compile(r"^(?:\S*/)?(mpirun|mpiexec|srun|torchrun|horovodrun|deepspeed|python3?|\w+_perf(?:_mpi)?)(?:\s|$)")
NP_RE = re.compile(r"(?:^|\s)(?:-np|-n|--np|--ntasks)[=\s]+(\d+)")
HOSTS_RE = re.compile(r"(?:^|\s)(?:-H|--host|-host)[=\s]+([\w.,:-]+)")
# Slurm srun -N/--nodes, torchrun --nnodes, deepspeed --num_nodes: the node count. Open MPI's mpirun -N is
# processes per node ("-N <num>: launch num processes per node on all allocated nodes", mpirun(1)): MPI_PERNODE_RE.
_NODE_FLAGS = r"--nodes|--nnodes|--num_nodes"
NODES_RE = re.compile(rf"(?:^|\s)(?:-N|{_NODE_FLAGS})[=\s]+(\d+)")
MPI_NODES_RE = re.compile(rf"(?:^|\s)(?:{_NODE_FLAGS})[=\s]+(\d+)")
MPI_PERNODE_RE = re.compile(r"(?:^|\s)-N[=\s]+(\d+)")
PERNODE_RE = re.compile(r"(?:^|\s)(?:--nproc[_-]per[_-]node|--ntasks-per-node|-npernode|--npernode|-ppn|--map-by\s+ppr:)"
                         r"[=\s:]*(\d+)")
TEST_RE = re.compile(r"\b(\w+)_perf(?:_mpi)?\b")
GPUS_RE = re.compile(r"(?:^|\s)-g[=\s]+(\d+)")
