"""The site's declared fabric policy: what the operator says the fabric is meant to be.

A RoCE fabric may be lossless (PFC on one priority) or lossy by design (ECN/DCQCN only, no PFC:
Onyx `roce lossy`, Cumulus's lossy-mode defaults); a site may pin NCCL_IB_TC and knows the link
rate it bought. Declared in `/etc/allreduce-doctor/site.toml`, `diagnose --site FILE`, or per
run with `--answer roce_mode=lossy` (answers override the file). The RoCE branch judges PFC, the
traffic class and the link rate against the declaration when there is one.

    [fabric]
    roce_mode = "lossless"   # or "lossy" (ECN only, no PFC)
    pfc_priority = 3         # lossless: the priority PFC protects
    nccl_ib_tc = 106         # the traffic class the jobs use (DSCP 26)
    link_gbps = 400          # the rate every compute port should run at
"""

from __future__ import annotations

from pathlib import Path

from allreduce_doctor.errors import DoctorError

DEFAULT_SITE = "/etc/allreduce-doctor/site.toml"
MODES = ("lossless", "lossy")
# name -> (what it must be, converter); a converter raises ValueError on a bad value.
KEYS = {
    "roce_mode": ("lossless or lossy", lambda v: _choice(str(v).strip().lower())),
    "pfc_priority": ("a priority 0-7", lambda v: _ranged(int(str(v).strip()), 0, 7)),
    "nccl_ib_tc": ("a traffic class 0-255", lambda v: _ranged(int(str(v).strip(), 0), 0, 255)),
    "link_gbps": ("a rate in Gb/s, e.g. 400", lambda v: _ranged(float(str(v).strip()), 1, 10_000)),
}


def _choice(value: str) -> str:
    if value not in MODES:
        raise ValueError(value)
    return value


def _ranged(value, low, high):
    if not low <= value <= high:
        raise ValueError(value)
    return value


def normalize(values: dict, where: str) -> dict:
    """Known keys converted; an unknown key or a bad value is one DoctorError line naming `where`."""
    out = {}
    for name, raw in values.items():
        if name not in KEYS:
            raise DoctorError(f"{where}: unknown setting {name!r}; known: {', '.join(KEYS)}")
        what, convert = KEYS[name]
        try:
            out[name] = convert(raw)
        except (ValueError, TypeError):
            raise DoctorError(f"{where}: {name} = {raw!r}: expected {what}") from None
    return out


def load_site(path: str, required: bool = True) -> dict:
    """The [fabric] table of a site file; {} when the default file is absent (required=False)."""
    file = Path(path)
    if not file.is_file():
        if required:
            raise DoctorError(f"--site {path}: no such file")
        return {}
    import tomllib  # here: most runs have no site file (2 ms of a pasted log's run)

    try:
        data = tomllib.loads(file.read_text(encoding="utf-8", errors="replace"))
    except tomllib.TOMLDecodeError as err:
        raise DoctorError(f"{path}: not valid TOML ({err})") from None
    except OSError as err:
        raise DoctorError(f"{path}: cannot be read ({err.strerror})") from None
    table = data.get("fabric", {})
    if not isinstance(table, dict) or set(data) - {"fabric"}:
        raise DoctorError(f"{path}: expected one [fabric] table with {', '.join(KEYS)}")
    return dict(normalize(table, path), source=path)


def declared(site: dict | None, answers: dict | None) -> dict:
    """The site file's policy, overridden by `--answer NAME=VALUE` for the same names."""
    policy = dict(site or {})
    given = {k: v for k, v in (answers or {}).items() if k in KEYS}
    if given:
        policy.update(normalize(given, "--answer"))
        policy["source"] = "--answer" if not site else f"{site.get('source')} + --answer"
    return policy
