"""The one redactor: secrets never leave the node, and never reach a bundle, a report or a ticket.

- Environments are filtered to an allow-list (the variables that change how NCCL moves data) and
  a secret-looking name (TOKEN, SECRET, PASSWORD, KEY, CREDENTIAL, AUTH, ...) is redacted even
  inside NCCL_/UCX_/CUDA_.
- Command lines: `--password X`, `--token=X` and every known token shape.
- Text (config files, pasted evidence, bundle members): token shapes, PEM private key blocks,
  `password=X` assignments and credentials in URLs.
- /proc/cmdline keeps only the parameters the probes read.

LiveHost applies it on the node, the bundle writer to every member it writes, the ticket builder
to every string of a diagnosis. Redacting twice is harmless: <redacted> stays itself.
"""

from __future__ import annotations

import re

REDACTED = "<redacted>"
RULES = ("token-like values (GitHub, GitLab, Slack, AWS, JWT, Hugging Face, API keys, private keys), "
         "secret-named variables, flags and assignments (TOKEN, PASSWORD, KEY, ...), and credentials in URLs")

# Variables that can change how NCCL moves data. Anything else is dropped.
ALLOWED_PREFIXES = (
    "NCCL_", "UCX_", "CUDA_", "NVIDIA_", "OMPI_MCA_", "HCOLL_", "SHARP_", "FI_", "TORCH_NCCL_",
    "TORCH_DISTRIBUTED_", "SLURM_JOB", "SLURM_NODELIST", "SLURM_NNODES",
)
ALLOWED_NAMES = frozenset({
    "LD_LIBRARY_PATH", "LD_PRELOAD", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK",
    "GLOO_SOCKET_IFNAME", "OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "SLURM_PROCID", "SLURM_LOCALID",
    "RDMAV_DRIVERS", "IBV_DRIVERS",  # verbs providers libibverbs loads (rdma-core dynamic_driver.c)
})
# Matched on the upper-cased name. KEY counts as its own word (_KEY, API_KEY): a partition key
# (NCCL_IB_PKEY, UCX_IB_PKEY; NCCL environment variable docs) and a document's "key" field are not secrets.
_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|PWD|CREDENTIAL|AUTH(?!OR)|COOKIE|PRIVATE|(?:API|ACCESS)_?KEY|_KEY(?:_|S?$)")
# Token shapes: GitHub (ghp_/gho_/ghu_/ghs_/ghr_, github_pat_), GitLab (glpat-), Slack (xox?-),
# AWS access key ids (AKIA/ASIA), Google API keys (AIza), Hugging Face (hf_), OpenAI (sk-), JWTs
# (three base64url parts, the first a JSON header: eyJ), PEM private key blocks.
PEM_BEGIN = "-----BEGIN "  # a private key block: the one token shape that spans lines
_TOKEN = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}|\bglpat-[A-Za-z0-9_-]{20,}"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_-]{35}"
    r"|\bhf_[A-Za-z0-9]{20,}|\bsk-[A-Za-z0-9_-]{20,}"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
    re.S,
)
# In a bundle member a token may follow a JSON escape: "line\nghp_..." has no word boundary
# between the escape's letter and the token. The bytes pattern drops the leading boundaries and
# _starts_token() judges each (rare) match, an escape (\n \t \r \b \f \uXXXX) counting as one.
_TOKEN_BYTES = re.compile(_TOKEN.pattern.replace("|\\b", "|").encode(), re.S)
_ESCAPE_BEFORE = re.compile(rb"(?:\\[nrtbf]|\\u[0-9a-fA-F]{4})\Z")
# name=value / name: value inside a value or a line, where the name says secret
_INLINE_SECRET = re.compile(
    r"((?:password|passwd|pwd|token|secret|api_?key|access_?key|credentials?|auth)\w*\s*[=:]\s*)([^\s&,;\"']+)", re.I)
_FLAG = re.compile(r"--?[A-Za-z][\w.-]*$")
_URL_CREDENTIALS = re.compile(r"(\w+://[^/\s:@]+:)([^@\s]+)(@)")
# The parameters the probes read from /proc/cmdline (parsers/kernel.py): the rest stays on the node.
CMDLINE_KEEP = frozenset({"iommu", "intel_iommu", "amd_iommu", "iommu.passthrough", "iommu.strict"})


def is_allowed(name: str) -> bool:
    return name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES)


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name.lstrip("-").upper().replace("-", "_")))


def redact_tokens(text: str) -> str:
    """Token shapes, URL credentials and secret-named assignments inside free text."""
    text = _TOKEN.sub(REDACTED, text)
    text = _URL_CREDENTIALS.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    return _INLINE_SECRET.sub(lambda m: m.group(1) + REDACTED, text)


def redact_tokens_only(text: str) -> str:
    """Token shapes in a bundle member's text, as redact_bytes does to its bytes (the same
    string back, not a copy, when there is none)."""
    return _TOKEN.sub(REDACTED, text)


def redact_bytes(data: bytes) -> bytes:
    """Token shapes in a bundle member (any bytes, JSON included): nothing else is changed."""
    if not _TOKEN_BYTES.search(data):
        return data
    return _TOKEN_BYTES.sub(lambda m: REDACTED.encode() if _starts_token(data, m.start()) else m.group(0), data)


def _starts_token(data: bytes, at: int) -> bool:
    """Whether a match at `at` begins a token: a private key block, or a shape after a non-word
    byte (the text's own word boundary) or after a JSON escape."""
    if data.startswith(b"-----BEGIN", at) or at == 0 or not (data[at - 1:at].isalnum() or data[at - 1:at] == b"_"):
        return True
    return bool(_ESCAPE_BEFORE.search(data, max(at - 6, 0), at))


def redact_value(name: str, value: str) -> str:
    """`value` of a variable or key called `name`, with anything secret-looking redacted."""
    if name and is_secret_name(name):
        return REDACTED
    return redact_tokens(value)


def filter_env(env: dict[str, str]) -> dict[str, str]:
    """Only allow-listed variables, each with secrets redacted."""
    return {k: redact_value(k, v) for k, v in sorted(env.items()) if is_allowed(k)}


def redact_argv(argv: list[str]) -> list[str]:
    """A command line with `--secret X`, `--secret=X`, `NAME=X` and token shapes redacted."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next and not arg.startswith("-"):
            out.append(REDACTED)
            hide_next = False
            continue
        hide_next = False
        if "=" in arg:
            name, _, value = arg.partition("=")
            out.append(f"{name}={redact_value(name, value)}")
        elif _FLAG.match(arg) and is_secret_name(arg):
            out.append(arg)
            hide_next = True
        else:
            out.append(redact_tokens(arg))
    return out


def redact_text(text: str) -> str:
    """A free-text file (nccl.conf, pasted evidence): secret-named NAME=value lines and token shapes."""
    out = []
    for line in text.splitlines(keepends=True):
        name = line.split("=", 1)[0].strip() if "=" in line else ""
        if name and " " not in name and is_secret_name(name):
            out.append(f"{name}={REDACTED}" + ("\n" if line.endswith("\n") else ""))
            continue
        out.append(redact_tokens(line))
    return "".join(out)


def keep_cmdline(text: str) -> str:
    """/proc/cmdline with only the parameters the probes read (the rest may carry secrets)."""
    kept = [word for word in text.split() if word.partition("=")[0] in CMDLINE_KEEP]
    return " ".join(kept) + "\n"


def redact_string(name: str, value: str) -> str:
    """One string of a document: by its key `name`, then line by line."""
    new = redact_value(name, value)
    return redact_text(new) if "\n" in new else new


def redact_diagnosis(data: dict) -> tuple[dict, list[str]]:
    """A redacted copy of the diagnosis and the places (JSON paths) where something was redacted."""
    places: list[str] = []
    seen: dict[tuple[str, str], str] = {}  # a diagnosis repeats its values (one fact, many checks)

    def redact(name: str, value: str) -> str:
        if (name, value) not in seen:
            seen[name, value] = redact_string(name, value)
        return seen[name, value]

    def walk(value, name: str, where: str):
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                safe_key = redact("", str(key))
                if safe_key != key:
                    places.append(f"{where} (a key)")
                out[safe_key] = walk(item, str(key), f"{where}.{safe_key}" if where else safe_key)
            return out
        if isinstance(value, list):
            if value and all(isinstance(item, str) for item in value):  # maybe a command line: --password X
                flagged = redact_argv(value)
                places.extend(f"{where}[{i}]" for i, (a, b) in enumerate(zip(value, flagged)) if a != b and b == REDACTED)
                value = [REDACTED if b == REDACTED else a for a, b in zip(value, flagged)]
            return [walk(item, name, f"{where}[{i}]") for i, item in enumerate(value)]
        if isinstance(value, str):
            new = redact(name, value)
            if new != value:
                places.append(where)
            return new
        return value

    return walk(data, "", ""), places
