"""Keep secrets on the node: filter environments to an allow-list, redact token-like values.

Used by LiveHost before a process environment or a config file leaves the host object, so
neither a bundle, a report nor a ticket can carry them.
"""

from __future__ import annotations

import re

# Variables that can change how NCCL moves data. Anything else is dropped.
ALLOWED_PREFIXES = (
    "NCCL_",
    "UCX_",
    "CUDA_",
    "NVIDIA_",
    "OMPI_MCA_",
    "HCOLL_",
    "SHARP_",
    "FI_",
    "TORCH_NCCL_",
    "TORCH_DISTRIBUTED_",
    "SLURM_JOB",
    "SLURM_NODELIST",
    "SLURM_NNODES",
)
ALLOWED_NAMES = frozenset(
    {
        "LD_LIBRARY_PATH",
        "LD_PRELOAD",
        "MASTER_ADDR",
        "MASTER_PORT",
        "WORLD_SIZE",
        "RANK",
        "LOCAL_RANK",
        "GLOO_SOCKET_IFNAME",
        "OMP_NUM_THREADS",
        "CUDA_VISIBLE_DEVICES",
        "SLURM_PROCID",
        "SLURM_LOCALID",
    }
)

REDACTED = "<redacted>"
_SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSW|PASSWD|PWD|API_?KEY|ACCESS_?KEY|PRIVATE|CREDENTIAL|AUTH)", re.I)
_SECRET_VALUE = re.compile(
    r"(ghp_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----|hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9]{20,})"
)
# key=value assignments inside a value (e.g. a URL or a config line) that name a secret
_INLINE_SECRET = re.compile(r"((?:password|passwd|token|secret|api_?key)\s*[=:]\s*)(\S+)", re.I)
_URL_CREDENTIALS = re.compile(r"(\w+://[^/\s:@]+:)([^@\s]+)(@)")


def is_allowed(name: str) -> bool:
    return name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)


def redact_value(name: str, value: str) -> str:
    """The value with anything secret-looking replaced by <redacted>."""
    if _SECRET_NAME.search(name) and not name.startswith(("NCCL_", "UCX_", "CUDA_")):
        return REDACTED
    if _SECRET_VALUE.search(value):
        return _SECRET_VALUE.sub(REDACTED, value)
    value = _URL_CREDENTIALS.sub(lambda m: m.group(1) + REDACTED + m.group(3), value)
    return _INLINE_SECRET.sub(lambda m: m.group(1) + REDACTED, value)


def filter_env(env: dict[str, str]) -> dict[str, str]:
    """Only allow-listed variables, each with secrets redacted."""
    return {k: redact_value(k, v) for k, v in sorted(env.items()) if is_allowed(k)}


def redact_text(text: str) -> str:
    """Redact a free-text file (nccl.conf): secret-named assignments and token-like values."""
    out = []
    for line in text.splitlines(keepends=True):
        name = line.split("=", 1)[0].strip() if "=" in line else ""
        if name and _SECRET_NAME.search(name) and not name.startswith(("NCCL_", "UCX_")):
            out.append(f"{name}={REDACTED}\n")
            continue
        line = _SECRET_VALUE.sub(REDACTED, line)
        line = _URL_CREDENTIALS.sub(lambda m: m.group(1) + REDACTED + m.group(3), line)
        out.append(_INLINE_SECRET.sub(lambda m: m.group(1) + REDACTED, line))
    return "".join(out)
