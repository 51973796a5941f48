"""`mlnx_qos -i IF` (mlnx-tools python/mlnx_qos): trust mode, DSCP->priority map, PFC per
priority, buffers and ETS traffic classes.

Read by line markers, not indentation: web copies drop the tool's tabs. A fragment holding
only the `PFC configuration:` rows parses too; what is absent comes back as None.
"""

from __future__ import annotations

import re

from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, kv, lines, require, to_int

_INTS_RE = re.compile(r"[0-9]{1,12}", re.ASCII)
_DSCP_RE = re.compile(r"^\s*prio\s*:\s*([0-9])\s+dscp\s*:([0-9,\s]*)$", re.ASCII)
_ROW_RE = re.compile(r"^\s*(priority|enabled|buffer)((?:\s+[0-9]+)+)\s*$", re.ASCII)
_TC_RE = re.compile(r"^\s*tc\s*:\s*([0-9]{1,9})\b(.*)$", re.ASCII)
_TC_PRIO_RE = re.compile(r"^\s*priority\s*:\s*([0-9\s,]+)$", re.ASCII)


def _ints(raw: str) -> list[int]:
    return [int(x) for x in _INTS_RE.findall(raw)]


def _tc(rest: str) -> dict:
    """' ratelimit: unlimited, tsa: ets, bw: 10%' -> {tsa, bw, ratelimit}."""
    tc: dict = {"priorities": [], "tsa": None, "bw": None, "ratelimit": None}
    for part in rest.split(","):
        pair = kv(part)
        if pair is None:
            continue
        key, raw = pair[0].lower(), pair[1]
        if key == "bw":
            tc["bw"] = to_int(raw.rstrip("%"))
        elif key in ("tsa", "ratelimit"):
            tc[key] = raw
    return tc


@parser("mlnx_qos")
def parse_mlnx_qos(text: str) -> dict:
    what = "mlnx_qos output (trust state, PFC configuration, tc lines)"
    require(text, what)
    out: dict = {
        "dcbx_mode": None,
        "trust": None,
        "pfc_enabled": None,
        "prio2buffer": None,
        "dscp2prio": None,
        "buffers": None,
        "cable_len": None,
        "tcs": {},
    }
    rows: dict[str, list[int]] = {}
    tc: dict | None = None
    found = False
    for line in lines(text):
        m = _DSCP_RE.match(line)
        if m:
            mapping = out["dscp2prio"] if out["dscp2prio"] is not None else {}
            for dscp in _ints(m.group(2)):
                mapping[str(dscp)] = int(m.group(1))
            out["dscp2prio"], found = mapping, True
            continue
        m = _ROW_RE.match(line)
        if m:
            rows[m.group(1)], found = _ints(m.group(2)), True
            continue
        m = _TC_RE.match(line)
        if m:
            tc = _tc(m.group(2))
            out["tcs"][m.group(1)], found = tc, True
            continue
        m = _TC_PRIO_RE.match(line)
        if m and tc is not None:
            tc["priorities"].extend(_ints(m.group(1)))
            continue
        pair = kv(line)
        if pair is None:
            continue
        key, raw = pair[0].lower(), pair[1]
        if key == "dcbx mode":
            out["dcbx_mode"], found = raw, True
        elif key.startswith("priority trust"):  # 'state' in current tools, 'mode' in some
            out["trust"], found = (raw.lower() or None), True
        elif key == "cable len":
            out["cable_len"] = to_int(raw)
        elif key.startswith("receive buffer size"):
            out["buffers"] = [int(x) for x in re.findall(r"(?<![=\w])[0-9]{1,12}(?=,|$)", raw, re.ASCII)]
    if "enabled" in rows:
        prios = rows.get("priority") or list(range(len(rows["enabled"])))
        out["pfc_enabled"] = [p for p, on in zip(prios, rows["enabled"]) if on]
    if "buffer" in rows:
        out["prio2buffer"] = rows["buffer"]
    if not found:
        raise fail(what, text)
    return out
