"""NCCL_TOPO_DUMP_FILE XML: the topology NCCL detected (NVIDIA/nccl src/graph/xml.cc ncclTopoDumpXmlRec
writes one tag a line: system, cpu, pci, gpu, nic, net, nvlink; attributes as key="value").

Read tag by tag with a regular expression, never with an XML library: no entity is expanded, so a
pasted file cannot grow in memory (the hard rule on loaders)."""

from __future__ import annotations

import re

from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, require

_TAG_RE = re.compile(r"<(system|cpu|pci|gpu|nic|net|nvlink|c2c)\b([^<>]*)>")
_ATTR_RE = re.compile(r'([\w.-]+)="([^"]*)"')
_KEEP = {"gpu": ("dev", "sm", "rank", "gdr"), "net": ("name", "dev", "speed", "port", "gdr", "maxconn", "coll"),
         "cpu": ("numaid", "arch", "vendor", "modelid")}


@parser("nccl_topo_xml")
def parse_nccl_topo_xml(text: str) -> dict:
    """{"version", "gpus": [{dev, sm, rank, gdr}], "nets": [{name, speed, port, gdr, ...}], "cpus", "pci_links"}."""
    require(text, "NCCL topology XML (<system version=...>)")
    out: dict = {"version": None, "gpus": [], "nets": [], "cpus": [], "pci_links": []}
    for tag, attrs in _TAG_RE.findall(text):
        values = dict(_ATTR_RE.findall(attrs))
        if tag == "system":
            out["version"] = values.get("version")
        elif tag == "pci" and "busid" in values:
            out["pci_links"].append({"busid": values["busid"], "speed": values.get("link_speed"),
                                     "width": values.get("link_width")})
        elif tag in _KEEP and len(out[tag + "s"]) < 256:
            out[tag + "s"].append({k: values.get(k) for k in _KEEP[tag] if k in values})
    if out["version"] is None and not out["gpus"] and not out["nets"]:
        raise fail("NCCL topology XML (<system version=...>)", text)
    out["pci_links"] = out["pci_links"][:256]
    return out
