"""NCCL's own rules, written once for both sides: a live node's job (probes/derive_*.py) and pasted
text (evidence/*.py) call these and never re-implement them.

- lists.py     NCCL_IB_HCA / NCCL_SOCKET_IFNAME list syntax (parseStringList, matchIfList)
- gdr.py       NCCL_NET_GDR_LEVEL and the other level variables (ncclGetLevel, ncclTopoCheckGdr)
- defaults.py  the defaults a check compares a variable with, per NCCL tag (IB timeout, retries, AR)
- gid.py       whether a RoCE GID routes between hosts
- versions.py  version strings as the rules compare them (domain.version_tuple re-exports it)

Each rule cites NVIDIA/nccl at the tags it covers; tests/nccl_rules/ pin every version boundary.
"""
