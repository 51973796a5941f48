"""The usual suspects of a context (runbooks/catalogue/usual_suspects.yaml), for a pasted text no line decides.

The context is read from what the text already gave the facts, plus the words of its prose:
- scope: log.job's scope (NCCL's hosts, the launcher), else the report's words (one node, across nodes);
- fabric: log.job's fabric (ib / roce), NCCL's network (a Libfabric / TCPX plugin, Socket), else words;
- platform: the GPU models the tools print (`... PCIe` is a PCIe card, `SXM` an NVSwitch board), a VM's
  flattened PCIe tree, the container the words name, and the table's `words` patterns (AMD EPYC, k8s, ...);
- the GPU models, NCCL's version and the derived symptom (symptom.py).
Each matching row adds its suspects, first row first, with its why and its basis (the sources' URLs) as
the supporting line and the cause's catalogue `paste` as the step that tells it from the next.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.symptoms import SYMPTOMS
from allreduce_doctor.yamlsrc import parse_yaml, plain, read_source

TABLE_FILE = "catalogue/usual_suspects.yaml"  # under the runbooks data folder
SCOPES = ("one_host", "several", "unknown")
FABRICS = ("ib", "roce", "efa", "tcpx", "socket")
PLATFORMS = ("amd_cpu", "pcie_gpus", "nvswitch", "kubernetes", "container", "vm")
WHEN_KEYS = {"scope", "fabric", "platform", "symptom", "gpu", "nccl_before"}
MAX_QUOTES = 4
# NCCL's network names of the platform plugins (`Using network X`, init.cc): aws-ofi-nccl registers "AWS Libfabric"
# / "Libfabric" (aws-ofi-nccl src/nccl_ofi_net.c), Google's TCPX plugin "GPUDirectTCPX" (gcp_tcpx).
_NETWORK_FABRIC = (("libfabric", "efa"), ("tcpx", "tcpx"), ("socket", "socket"))


class SuspectsError(DoctorError):
    """A bad row of usual_suspects.yaml."""


@dataclass(frozen=True)
class Suspect:
    cause: str
    basis: tuple[str, ...]  # URLs
    why: str


@dataclass(frozen=True)
class Row:
    id: str
    when: dict
    suspects: tuple[Suspect, ...]


@dataclass(frozen=True)
class Table:
    words: dict[str, tuple[tuple[str, re.Pattern], ...]]  # platform / fabric -> (value, pattern)
    rows: tuple[Row, ...]
    sources: dict[str, str]


@dataclass
class Context:
    scope: str = "unknown"
    fabric: str = ""
    platform: set[str] = field(default_factory=set)
    gpus: list[str] = field(default_factory=list)
    nccl: str | None = None
    symptom: str | None = None

    def describe(self) -> str:
        parts = [{"one_host": "one host", "several": "several hosts"}.get(self.scope, "")]
        parts += [self.fabric.upper() if self.fabric != "socket" else "TCP sockets"] if self.fabric else []
        parts += sorted(p.replace("_", " ") for p in self.platform) + self.gpus[:2]
        parts += [f"NCCL {self.nccl}"] if self.nccl else []
        parts += [self.symptom] if self.symptom else []
        return ", ".join(p for p in parts if p)


def table_path() -> Path:
    from allreduce_doctor.resources import data_dir

    return data_dir("runbooks") / TABLE_FILE


@lru_cache(maxsize=1)
def table() -> Table:
    """The shipped table, checked (a bad row is one FILE: line)."""
    path = table_path()
    return load(path, plain(parse_yaml(read_source(path, SuspectsError), str(path), SuspectsError)))


def load(path: Path, data) -> Table:
    from allreduce_doctor.runbook.causes import CAUSES

    def bad(where: str, message: str) -> SuspectsError:
        return SuspectsError(f"{path}: {where}: {message}")

    if not isinstance(data, dict) or set(data) != {"sources", "words", "rows"}:
        raise bad("top level", "expected exactly the keys sources, words, rows")
    sources = {str(k): str(v) for k, v in (data["sources"] or {}).items()}
    words: dict[str, tuple[tuple[str, re.Pattern], ...]] = {}
    for key, values in (("platform", PLATFORMS), ("fabric", FABRICS)):
        patterns = (data["words"] or {}).get(key) or {}
        if set(patterns) - set(values):
            raise bad(f"words.{key}", f"each value is one of {', '.join(values)}")
        words[key] = tuple((str(v), _rx(bad, f"words.{key}.{v}", p)) for v, p in patterns.items())
    rows = []
    for i, row in enumerate(data["rows"] or []):
        where = f"rows[{i}]"
        if not isinstance(row, dict) or set(row) != {"id", "when", "suspects"} or not isinstance(row["when"], dict):
            raise bad(where, "a row has exactly id, when (a mapping) and suspects")
        when = dict(row["when"])
        if set(when) - WHEN_KEYS:
            raise bad(f"{where}.when", f"keys are some of {', '.join(sorted(WHEN_KEYS))}")
        checked: tuple[tuple[str, tuple[str, ...]], ...] = (("scope", SCOPES), ("fabric", FABRICS), ("platform", PLATFORMS),
                                                            ("symptom", tuple(SYMPTOMS)))
        for key, known in checked:
            if set(when.get(key) or ()) - set(known):  # a misspelt value would never match: say so
                raise bad(f"{where}.when.{key}", f"each is one of {', '.join(known)}")
        if "gpu" in when:
            when["gpu"] = _rx(bad, f"{where}.when.gpu", when["gpu"])
        if "nccl_before" in when:
            when["nccl_before"] = _version(str(when["nccl_before"])) or ()
        suspects = []
        for j, s in enumerate(row["suspects"] or []):
            at = f"{where}.suspects[{j}]"
            if not isinstance(s, dict) or not {"cause", "basis"} <= set(s) <= {"cause", "basis", "why"}:
                raise bad(at, "a suspect has cause, basis (and why)")
            info = CAUSES.get(str(s["cause"]))
            if info is None or info.healthy:
                raise bad(at, f"'{s['cause']}' is no fault of the cause catalogue")
            if not info.paste:
                raise bad(at, f"'{s['cause']}' has no `paste` in the cause catalogue: the suspect needs the one paste that decides it")
            if not s["basis"] or set(s["basis"]) - set(sources):
                raise bad(at, f"basis: names of sources ({', '.join(sources)})")
            suspects.append(Suspect(info.id, tuple(sources[b] for b in s["basis"]), str(s.get("why") or info.title)))
        if not suspects:
            raise bad(where, "a row names at least one suspect")
        rows.append(Row(str(row["id"]), when, tuple(suspects)))
    return Table(words, tuple(rows), sources)


def _rx(bad, where: str, pattern) -> re.Pattern:
    try:
        return re.compile(str(pattern), re.IGNORECASE)
    except re.error as exc:
        raise bad(where, f"bad pattern: {exc}") from None


def _version(text: str) -> tuple[int, ...] | None:
    m = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


def read_words(text: str, where: str, seen: dict[str, dict]) -> bool:
    """The context values one prose line names, into `seen` ("platform.amd_cpu" -> {source, quote}); True when
    it named one not seen before (evidence/report_words.py calls it on each prose line)."""
    from allreduce_doctor.redact import redact_text  # a pasted line is shown back: secrets redacted first

    new = False
    for key, patterns in table().words.items():
        for value, pattern in patterns:
            name = f"{key}.{value}"
            if name not in seen and len(seen) < 16 and pattern.search(text):
                seen[name] = {"source": where, "quote": redact_text(" ".join(text.split())[:120])}
                new = True
    return new


def context(nccl: dict | None, job: dict | None, host: dict | None, tests: dict | None, said: str | None) -> Context:
    """The context of one text from log.nccl, log.job, log.host and log.tests (None when not read)."""
    nccl, job, host, tests = nccl or {}, job or {}, host or {}, tests or {}
    words = job.get("report") or {}
    named = words.get("context") or {}
    ctx = Context(symptom=said)
    scale = words.get("scale") or {}
    scope = job.get("scope")
    ctx.scope = ("one_host" if scope == "intra" else "several" if scope == "inter"
                 else "several" if {"multi_node", "one_works"} & set(scale) else "one_host" if "one_node" in scale
                 else "unknown")
    network = str(nccl.get("network") or "").lower()
    ctx.fabric = (job.get("fabric") or next((f for n, f in _NETWORK_FABRIC if n in network), "")
                  or next((k.split(".", 1)[1] for k in named if k.startswith("fabric.")), ""))
    ctx.platform = {k.split(".", 1)[1] for k in named if k.startswith("platform.")}
    main = tests.get("main") or {}
    ctx.gpus = list(dict.fromkeys([*(host.get("gpu_models") or []), *(main.get("gpu_models") or [])]))[:8]
    for model in ctx.gpus:  # nvidia-smi's and nccl-tests' names: "NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-80GB"
        if re.search(r"\bPCIe\b|-PCIE-", model, re.IGNORECASE):
            ctx.platform.add("pcie_gpus")
        elif re.search(r"\bSXM\d?\b|-SXM\d?-", model, re.IGNORECASE):
            ctx.platform.add("nvswitch")
    if job.get("virtual_pcie"):
        ctx.platform.add("vm")
    if words.get("container") or {"platform.kubernetes"} & set(named):
        ctx.platform.add("container")
    ctx.nccl = nccl.get("version")
    return ctx


def matches(row: Row, ctx: Context) -> bool:
    when = row.when
    if "scope" in when and ctx.scope not in when["scope"]:
        return False
    if "fabric" in when and ctx.fabric not in when["fabric"]:
        return False
    if "platform" in when and not set(when["platform"]) <= ctx.platform:
        return False
    if "symptom" in when and ctx.symptom not in when["symptom"]:
        return False
    if "gpu" in when and not any(when["gpu"].search(g) for g in ctx.gpus):
        return False
    if "nccl_before" in when:
        have = _version(ctx.nccl or "")
        if have is None or have >= when["nccl_before"]:
            return False
    return True


def suspects_for(ctx: Context) -> list[tuple[Row, Suspect]]:
    """(row, suspect) of every matching row, first row first, each cause once; none without a symptom."""
    out: list[tuple[Row, Suspect]] = []
    if ctx.symptom is None:  # a text that says of no trouble (a question, a result) has no suspects
        return out
    for row in table().rows:
        if matches(row, ctx):
            out += [(row, s) for s in row.suspects if all(s.cause != o.cause for _, o in out)]
    return out


def quotes(job: dict | None) -> list[str]:
    """The prose lines that named the context ("FILE:LINE: quote"), for the supporting lines."""
    named = ((job or {}).get("report") or {}).get("context") or {}
    return list(dict.fromkeys(f"{e['source']}: \"{e['quote']}\"" for e in named.values()))[:MAX_QUOTES]
