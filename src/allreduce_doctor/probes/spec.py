"""Probe specs: load probes/*.yaml into checked dataclasses.

A probe is data: what to read or run, over which enumerated instances, with which parser.
Every name a spec uses (parser, enumerator, builtin, derivation) is checked here against its
registry, and every mistake is reported as `file:line:col: message`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field  # every class has a docstring: else dataclass() builds one at import
from pathlib import Path

from allreduce_doctor.errors import ProbeSpecError
from allreduce_doctor.suggest import closest, hint
from allreduce_doctor.yamlsrc import Located, parse_yaml, plain, read_source

KINDS = ("file", "files", "glob", "command", "chain", "exists", "builtin", "derive", "evidence")
PROBE_KEYS = frozenset(
    {"id", "title", "provides", "foreach", "parser", "timeout", "requires", "root", "sampled", "skip", "from",
     "counter_group", *KINDS}
)
STEP_KEYS = frozenset({"command", "parser", "take", "expect", "otherwise"})
# How a sampled probe's counters change (probes/rates.py counter_mode): IB PMA PortCounters
# saturate ("counters"), mlx5 hw_counters wrap at 32 bits, ethtool -S counters are 64-bit.
COUNTER_GROUPS = ("counters", "hw_counters", "ethtool")
ENUM_KEYS = frozenset({"title", "glob", "name", "read", "first", "links", "from", "match", "require", "expand",
                       "expand_match"})
DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 120.0
_TEMPLATE_VAR = re.compile(r"\{(\w+)\}")


@dataclass
class FieldSpec:
    """One file of a `files` probe and the parser that reads it."""

    path: str
    parser: str = "text"


@dataclass
class EnumeratorSpec:
    """What a probe fans out over (every IB port, every netdev): a glob or another enumerator,
    and what each item reads."""

    name: str
    glob: str = ""
    label: str = ""
    read: dict[str, str] = field(default_factory=dict)
    first: dict[str, str] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    source: str = ""  # another enumerator to filter ("from")
    match: dict[str, str] = field(default_factory=dict)
    require: list[str] = field(default_factory=list)
    # attr -> a glob whose {attr} part yields one item per match (the item stays as it is when
    # nothing matches), for the items whose attributes match expand_match
    expand: dict[str, str] = field(default_factory=dict)
    expand_match: dict[str, str] = field(default_factory=dict)
    title: str = ""
    location: str = ""


@dataclass
class ChainStep:
    """One command of a chained probe: `take` binds {variable: field of its parsed dict} for the
    later steps' argv; `expect` ({variable: regex}) ends the chain with `otherwise` as the reason."""

    command: ProbeSpec
    take: dict[str, str] = field(default_factory=dict)
    expect: dict[str, str] = field(default_factory=dict)
    otherwise: str = ""


@dataclass
class ProbeSpec:
    """One probe of probes/*.yaml: what it reads or runs, what it fans out over, and the parser
    of its output."""

    id: str
    kind: str
    provides: str
    title: str = ""
    foreach: str = ""
    parser: str = ""
    path: str = ""  # file
    fields: dict[str, FieldSpec] = field(default_factory=dict)  # files
    pattern: str = ""  # glob
    skip: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)  # command
    steps: list[ChainStep] = field(default_factory=list)  # chain
    paths: list[str] = field(default_factory=list)  # exists
    builtin: str = ""  # builtin / derive name
    inputs: list[str] = field(default_factory=list)  # derive: facts it reads
    timeout: float = DEFAULT_TIMEOUT
    requires_tool: str = ""
    requires_path: str = ""
    root: bool = False
    sampled: bool = False
    counter_group: str = ""  # sampled: how its counters change (COUNTER_GROUPS); "" from its kind
    location: str = ""

    def touches(self) -> list[str]:
        """Files, globs and commands this probe may touch, for `probes list`."""
        if self.kind == "file":
            return [self.path]
        if self.kind == "files":
            return [f.path for f in self.fields.values()]
        if self.kind == "glob":
            return [self.pattern]
        if self.kind == "command":
            return [" ".join(self.argv)]
        if self.kind == "chain":
            return [" ".join(step.command.argv) for step in self.steps]
        if self.kind == "exists":
            return list(self.paths)
        if self.kind == "builtin" and self.title:  # a builtin's title declares what it reads
            return [f"builtin:{self.builtin}: {' '.join(self.title.split())}"]
        return [f"{self.kind}:{self.builtin}"]


@dataclass
class Catalogue:
    """Every probe and enumerator, with the digest of the files they came from."""

    probes: dict[str, ProbeSpec]
    enumerators: dict[str, EnumeratorSpec]
    digest: str

    def by_fact(self) -> dict[str, ProbeSpec]:
        return {p.provides: p for p in self.probes.values()}

    def facts(self) -> set[str]:
        return {p.provides for p in self.probes.values()}


def _err(filename: str, node, msg: str, key: str | None = None) -> ProbeSpecError:
    line, col = getattr(node, "line", 0), getattr(node, "col", 0)
    if key is not None and isinstance(node, Located) and key in node.key_lines:
        line, col = node.key_lines[key]
    return ProbeSpecError(f"{filename}:{line}:{col}: {msg}")


def _suggest(name: str, options) -> str:
    return hint(closest(str(name), options))


def _str_map(filename: str, owner: Located, key: str) -> dict[str, str]:
    value = owner.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise _err(filename, owner, f"'{key}' must be a mapping of names to strings", key)
    return dict(value)


def _load_enumerator(filename: str, name: str, node) -> EnumeratorSpec:
    if not isinstance(node, Located):
        raise ProbeSpecError(f"{filename}: enumerator '{name}' must be a mapping")
    for key in node:
        if key not in ENUM_KEYS:
            raise _err(filename, node, f"unknown key '{key}' in enumerator '{name}'{_suggest(key, ENUM_KEYS)}", key)
    if bool(node.get("glob")) == bool(node.get("from")):
        raise _err(filename, node, f"enumerator '{name}' needs exactly one of 'glob' or 'from'")
    return EnumeratorSpec(
        name=name,
        glob=str(node.get("glob", "")),
        label=str(node.get("name", "")),
        read=_str_map(filename, node, "read"),
        first=_str_map(filename, node, "first"),
        links=_str_map(filename, node, "links"),
        source=str(node.get("from", "")),
        match=_str_map(filename, node, "match"),
        require=[str(r) for r in node.get("require", [])],
        expand=_str_map(filename, node, "expand"),
        expand_match=_str_map(filename, node, "expand_match"),
        title=str(node.get("title", "")),
        location=f"{filename}:{node.line}",
    )


def _load_probe(filename: str, node, parsers: set[str], builtins: set[str], derivations: set[str]) -> ProbeSpec:
    if not isinstance(node, Located):
        raise ProbeSpecError(f"{filename}: every entry under 'probes' must be a mapping")
    for key in node:
        if key not in PROBE_KEYS:
            raise _err(filename, node, f"unknown key '{key}'{_suggest(key, PROBE_KEYS)}", key)
    pid = node.get("id")
    if not isinstance(pid, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", pid):
        raise _err(filename, node, "every probe needs an 'id' of lowercase letters, digits and '_'", "id")
    kinds = [k for k in KINDS if k in node]
    if len(kinds) != 1:
        raise _err(filename, node, f"probe '{pid}' needs exactly one of: {', '.join(KINDS)}")
    kind = kinds[0]
    provides = node.get("provides")
    if not isinstance(provides, str) or not re.fullmatch(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)+", provides):
        raise _err(filename, node, f"probe '{pid}' needs 'provides: area.fact' (dotted lowercase name)", "provides")
    spec = ProbeSpec(
        id=pid,
        kind=kind,
        provides=provides,
        title=str(node.get("title", "")),
        foreach=str(node.get("foreach", "")),
        parser=str(node.get("parser", "")),
        root=bool(node.get("root", False)),
        sampled=bool(node.get("sampled", False)),
        skip=[str(s) for s in node.get("skip", [])],
        location=f"{filename}:{node.line}",
    )
    value = node[kind]
    if kind == "file":
        spec.path = str(value)
        spec.parser = spec.parser or "text"
    elif kind == "files":
        if not isinstance(value, dict) or not value:
            raise _err(filename, node, f"probe '{pid}': 'files' must map field names to paths", kind)
        for fname, fval in value.items():
            if isinstance(fval, str):
                spec.fields[fname] = FieldSpec(fval)
            elif isinstance(fval, dict) and "path" in fval:
                spec.fields[fname] = FieldSpec(str(fval["path"]), str(fval.get("parser", "text")))
            else:
                raise _err(filename, value, f"probe '{pid}': field '{fname}' needs a path (or {{path, parser}})", fname)
    elif kind == "glob":
        spec.pattern = str(value)
        spec.parser = spec.parser or "text"
    elif kind in ("command", "chain"):
        timeout = node.get("timeout", DEFAULT_TIMEOUT)
        if not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT:
            raise _err(filename, node, f"probe '{pid}': timeout must be a number of seconds in (0, {MAX_TIMEOUT:g}]", "timeout")
        spec.timeout = float(timeout)
        if kind == "command":
            spec.argv = _argv(filename, node, pid, value, kind)
            spec.parser = spec.parser or "text"
        else:
            spec.steps = _chain(filename, node, spec, value)
    elif kind == "exists":
        spec.paths = [str(p) for p in (value if isinstance(value, list) else [value])]
    elif kind == "builtin":
        spec.builtin = str(value)
        if spec.builtin not in builtins:
            raise _err(filename, node, f"probe '{pid}': unknown builtin '{value}'{_suggest(value, builtins)}", kind)
    elif kind == "evidence":
        spec.builtin = str(value)  # the recognizer that produces it from pasted text; never run on a host
    elif kind == "derive":
        spec.builtin = str(value)
        if spec.builtin not in derivations:
            raise _err(filename, node, f"probe '{pid}': unknown derivation '{value}'{_suggest(value, derivations)}", kind)
        spec.inputs = [str(f) for f in node.get("from", [])]
    group = node.get("counter_group", "")
    if group and group not in COUNTER_GROUPS:
        raise _err(filename, node, f"probe '{pid}': counter_group must be one of {', '.join(COUNTER_GROUPS)}", "counter_group")
    spec.counter_group = str(group)
    parsers_used = [spec.parser] if spec.parser else []
    parsers_used += [f.parser for f in spec.fields.values()] + [s.command.parser for s in spec.steps]
    for pname in parsers_used:
        if pname not in parsers:
            raise _err(filename, node, f"probe '{pid}': unknown parser '{pname}'{_suggest(pname, parsers)}", "parser")
    requires = node.get("requires", {})
    if requires:
        if not isinstance(requires, dict) or not set(requires) <= {"tool", "path"}:
            raise _err(filename, node, f"probe '{pid}': 'requires' takes 'tool' and/or 'path'", "requires")
        spec.requires_tool = str(requires.get("tool", ""))
        spec.requires_path = str(requires.get("path", ""))
    return spec


def _argv(filename: str, node, pid: str, value, key: str) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(a, (str, int)) for a in value):
        raise _err(filename, node, f"probe '{pid}': '{key}' must be an argv list of strings, never a shell string", key)
    return [str(a) for a in value]


def _chain(filename: str, node, spec: ProbeSpec, value) -> list[ChainStep]:
    """The steps of a chained probe, each a command whose argv may use what earlier steps took."""
    if not isinstance(value, list) or len(value) < 2:
        raise _err(filename, node, f"probe '{spec.id}': 'chain' must be a list of two or more steps", "chain")
    steps: list[ChainStep] = []
    taken: set[str] = set()
    for number, snode in enumerate(value, 1):
        where = f"probe '{spec.id}' step {number}"
        if not isinstance(snode, Located) or "command" not in snode:
            raise _err(filename, value, f"{where} needs a 'command' (an argv list)")
        for key in snode:
            if key not in STEP_KEYS:
                raise _err(filename, snode, f"{where}: unknown key '{key}'{_suggest(key, STEP_KEYS)}", key)
        argv = _argv(filename, snode, spec.id, snode["command"], "command")
        later = {v for a in argv for v in _TEMPLATE_VAR.findall(a)} & (_taken_names(value[number - 1:]) - taken)
        if later:
            raise _err(filename, snode, f"{where} uses {{{sorted(later)[0]}}} before a step takes it", "command")
        step = ChainStep(ProbeSpec(id=f"{spec.id}.{number}", kind="command", provides=spec.provides, argv=argv,
                                   parser=str(snode.get("parser", "text")), timeout=spec.timeout,
                                   location=f"{filename}:{snode.line}"),
                         take=_str_map(filename, snode, "take"), expect=_str_map(filename, snode, "expect"),
                         otherwise=str(snode.get("otherwise", "")))
        unknown = set(step.expect) - set(step.take)
        if unknown:
            raise _err(filename, snode, f"{where}: 'expect' names {sorted(unknown)[0]}, which it does not take", "expect")
        taken |= set(step.take)
        steps.append(step)
    return steps


def _taken_names(steps) -> set[str]:
    return {name for s in steps if isinstance(s, Located) for name in (s.get("take") or {})}


def load_catalogue(paths: list[Path]) -> Catalogue:
    """Load and cross-check every probe file. Raises ProbeSpecError with `file:line:col`."""
    from allreduce_doctor.parsers import registry
    from allreduce_doctor.probes.builtins import BUILTINS
    from allreduce_doctor.probes.derive import DERIVATIONS

    parsers, builtins, derivations = set(registry()), set(BUILTINS), set(DERIVATIONS)
    probes: dict[str, ProbeSpec] = {}
    enums: dict[str, EnumeratorSpec] = {}
    digest = hashlib.sha256()
    for path in paths:
        text = read_source(path, ProbeSpecError)
        digest.update(text.encode())
        filename = Path(path).name
        doc = plain(parse_yaml(text, filename, ProbeSpecError))
        if doc is None:
            continue
        if not isinstance(doc, Located) or not set(doc) <= {"probes", "enumerators"}:
            raise ProbeSpecError(f"{filename}:1:1: a probe file is a mapping with 'probes' and/or 'enumerators'")
        for name, enode in (doc.get("enumerators") or {}).items():
            if name in enums:
                raise _err(filename, doc["enumerators"], f"enumerator '{name}' defined twice", name)
            enums[name] = _load_enumerator(filename, name, enode)
        for pnode in doc.get("probes") or []:
            spec = _load_probe(filename, pnode, parsers, builtins, derivations)
            if spec.id in probes:
                raise _err(filename, pnode, f"probe id '{spec.id}' already used at {probes[spec.id].location}", "id")
            probes[spec.id] = spec
    _cross_check(probes, enums)
    return Catalogue(probes, enums, digest.hexdigest()[:16])


def _cross_check(probes: dict[str, ProbeSpec], enums: dict[str, EnumeratorSpec]) -> None:
    facts: dict[str, ProbeSpec] = {}
    for spec in probes.values():
        if spec.provides in facts:
            raise ProbeSpecError(f"{spec.location}: fact '{spec.provides}' is already provided by probe '{facts[spec.provides].id}'")
        facts[spec.provides] = spec
    for spec in probes.values():
        if spec.foreach and spec.foreach not in enums:
            raise ProbeSpecError(f"{spec.location}: probe '{spec.id}': unknown enumerator '{spec.foreach}'{_suggest(spec.foreach, enums)}")
        for fact in spec.inputs:
            if fact not in facts:
                raise ProbeSpecError(f"{spec.location}: probe '{spec.id}': no probe provides '{fact}'{_suggest(fact, facts)}")
        argvs = [spec.argv] + [s.command.argv for s in spec.steps]
        taken = {name for s in spec.steps for name in s.take}
        if not spec.foreach and any(set(_TEMPLATE_VAR.findall(a)) - taken for argv in argvs for a in argv):
            raise ProbeSpecError(f"{spec.location}: probe '{spec.id}': argv uses {{placeholders}} but has no 'foreach'")
    for enum in enums.values():
        if enum.source and enum.source not in enums:
            raise ProbeSpecError(f"{enum.location}: enumerator '{enum.name}': unknown source '{enum.source}'{_suggest(enum.source, enums)}")
