"""YAML with exact locations, the one loader for runbooks and probe specs.

Nodes are composed with a SafeLoader subclass and keep their line/column. Nothing here builds
Python objects from tags: a scalar keeps its text and resolved tag, so `yes:`/`no:` stay the
strings they look like, and any tag beyond YAML's plain ones is refused. Duplicate keys, which
yaml silently overwrites, are errors; merge keys are not supported. Limits are checked before
anything is composed (the file's size, then its nesting depth and node count from the event
stream), and aliases are followed with a node bound (no "billion laughs"). Every error is one
located line: FILE:LINE:COL: MESSAGE, raised as the caller's DoctorError subclass.

Runbooks read the located tree (YMap, YSeq, YScalar); probe specs read `plain()` values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.suggest import hint

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import yaml

MAX_BYTES = 2 * 1024 * 1024  # the shipped runbooks and probe files are under 100 KB together
MAX_DEPTH = 64  # the shipped files nest 8 levels; the composer recurses once per level
MAX_NODES = 200_000
_PLAIN_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:timestamp",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
}


_LOADER: type | None = None


def _located_loader() -> type:
    """A SafeLoader used only to compose: every node carries start/end marks. Built on first use:
    yaml is imported only when a file is parsed (a run on cached knowledge parses none)."""
    global _LOADER
    if _LOADER is None:
        import yaml

        # libyaml's parser (when PyYAML was built with it) composes the same nodes with the same
        # marks, several times faster; construction stays SafeLoader's.
        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        _LOADER = type("LocatedLoader", (base,), {"__doc__": _located_loader.__doc__})
    return _LOADER


def __getattr__(name: str):
    if name == "LocatedLoader":  # the loader class, as `yamlsrc.LocatedLoader`
        return _located_loader()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Location:
    file: str
    line: int  # 1-based
    col: int  # 1-based
    path: str  # YAML path, e.g. nodes.gid_index.check ("<document>" for the top)
    error_cls: type[DoctorError] = field(default=DoctorError, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def moved(self, line: int, col: int) -> Location:
        return Location(self.file, line, col, self.path, self.error_cls)

    def error(self, message: str, suggestion: str | None = None) -> DoctorError:
        """The one-line error: FILE:LINE:COL: MESSAGE (at YAML.PATH) did you mean 'x'?"""
        return self.error_cls(f"{self}: {message} (at {self.path}){hint(suggestion)}")


@dataclass
class YNode:
    loc: Location  # where the value starts
    key_loc: Location  # where the key naming it stands (the value's own loc at the top)


@dataclass
class YScalar(YNode):
    text: str = ""
    tag: str = ""
    style: str | None = None
    start: int = 0  # character offsets of the scalar in the source
    end: int = 0

    @property
    def is_null(self) -> bool:
        return self.tag == "tag:yaml.org,2002:null"


@dataclass
class YMap(YNode):
    entries: dict[str, tuple[YScalar, YNode]] = field(default_factory=dict)


@dataclass
class YSeq(YNode):
    items: list[YNode] = field(default_factory=list)


def describe(node: YNode | None) -> str:
    """What a value is, for 'expected X, got Y' messages."""
    if node is None:
        return "nothing"
    if isinstance(node, YMap):
        return "a mapping"
    if isinstance(node, YSeq):
        return "a list"
    if isinstance(node, YScalar) and node.is_null:
        return "nothing"
    return "text"


def read_source(path: Path | str, error_cls: type[DoctorError]) -> str:
    """A YAML file's text: its size checked before it is read, UTF-8 or a located error that
    quotes nothing from the file."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise error_cls(f"{path}:1:1: {_size_problem(size)}")
        data = path.read_bytes()
    except OSError as exc:
        raise error_cls(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error_cls(f"{path}:1:1: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _size_problem(size: int) -> str:
    return f"file too large for YAML here ({size / 1048576:.1f} MiB; at most {MAX_BYTES // 1048576} MiB)"


def parse_yaml(text: str, filename: str, error_cls: type[DoctorError] = DoctorError) -> YNode | None:
    """Compose `text` into located nodes; None for an empty document. Raises error_cls."""
    if len(text) > MAX_BYTES:  # characters: at least as many bytes
        raise error_cls(f"{filename}:1:1: {_size_problem(len(text.encode('utf-8', 'replace')))}")
    import yaml

    loader = _located_loader()(text)
    try:
        _check_shape(text, filename, error_cls)
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(_canonical_error(text, exc), filename, error_cls) from None
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "unreadable YAML"
        raise error_cls(f"{filename}:1:1: YAML syntax error: {first}") from None
    finally:
        loader.dispose()
    if root is None:
        return None
    return _Converter(filename, error_cls).convert(root, "<document>", None)


def _check_shape(text: str, filename: str, error_cls: type[DoctorError]) -> None:
    """Depth and node count from the event stream (no recursion), before composing."""
    import yaml

    depth = count = 0
    for event in yaml.parse(text, Loader=_located_loader()):
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
            continue
        if not isinstance(event, yaml.NodeEvent):  # stream and document events
            continue
        mark = event.start_mark
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise error_cls(f"{filename}:{mark.line + 1}:{mark.column + 1}: nested deeper than {MAX_DEPTH} levels")
        count += 1
        if count > MAX_NODES:
            raise error_cls(f"{filename}:{mark.line + 1}:{mark.column + 1}: document too large (too many nodes)")


def _canonical_error(text: str, exc: yaml.MarkedYAMLError) -> yaml.MarkedYAMLError:
    """libyaml words errors differently; re-parse with the pure-Python parser for stable messages."""
    import yaml

    try:
        yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as pure:
        return pure
    except (yaml.YAMLError, RecursionError):
        pass
    return exc


def _syntax_error(exc: yaml.MarkedYAMLError, filename: str, error_cls: type[DoctorError]) -> DoctorError:
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    problem = " ".join((exc.problem or "invalid YAML").split())
    context = " ".join((exc.context or "").split())
    detail = f"{problem} ({context})" if context else problem
    return error_cls(f"{filename}:{line}:{col}: YAML syntax error: {detail}")


class _Converter:
    def __init__(self, filename: str, error_cls: type[DoctorError]):
        self.filename, self.error_cls = filename, error_cls
        self.count = 0
        self.active: set[int] = set()  # ids of nodes being converted (recursive aliases)
        from yaml.nodes import ScalarNode, SequenceNode

        self.scalar_node, self.sequence_node = ScalarNode, SequenceNode

    def loc(self, node: yaml.Node, path: str) -> Location:
        return Location(self.filename, node.start_mark.line + 1, node.start_mark.column + 1, path, self.error_cls)

    def convert(self, node: yaml.Node, path: str, key_loc: Location | None) -> YNode:
        here = self.loc(node, path)
        key_loc = key_loc or here
        self.count += 1
        if self.count > MAX_NODES:
            raise here.error("document too large (too many nodes, or aliases expanding)")
        if node.tag not in _PLAIN_TAGS:
            shown = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise here.error(f"unsupported YAML tag '{shown}'")
        if isinstance(node, self.scalar_node):
            return YScalar(here, key_loc, node.value, node.tag, node.style, node.start_mark.index, node.end_mark.index)
        if id(node) in self.active:
            raise here.error("recursive alias")
        self.active.add(id(node))
        try:
            if isinstance(node, self.sequence_node):
                items = [self.convert(item, f"{path}[{i}]", None) for i, item in enumerate(node.value)]
                return YSeq(here, key_loc, items)
            return self.mapping(node, path, here, key_loc)
        finally:
            self.active.discard(id(node))

    def mapping(self, node: yaml.MappingNode, path: str, here: Location, key_loc: Location) -> YMap:
        out = YMap(here, key_loc)
        for key_node, value_node in node.value:
            if not isinstance(key_node, self.scalar_node):
                raise self.loc(key_node, path).error("a key must be a plain name, not a mapping or list")
            key = key_node.value
            child = key if path == "<document>" else f"{path}.{key}"
            kloc = self.loc(key_node, child)
            if key == "<<":
                raise kloc.error("merge keys ('<<') are not supported")
            if key in out.entries:
                first = out.entries[key][0].loc.line
                raise kloc.error(f"duplicate key '{key}' (first at line {first})")
            key_scalar = YScalar(kloc, kloc, key, key_node.tag, key_node.style, key_node.start_mark.index, key_node.end_mark.index)
            out.entries[key] = (key_scalar, self.convert(value_node, child, kloc))
        return out


def position_in_scalar(source: str, scalar: YScalar, offset: int) -> tuple[int, int] | None:
    """The 1-based (line, col) in `source` of character `offset` of the scalar's value.

    Walks the scalar's source text and its value side by side (folded newlines, indentation
    and block headers skipped). None when they cannot be aligned (escapes): the caller then
    falls back to the scalar's start.
    """
    value, style = scalar.text, scalar.style
    begin, end = scalar.start, scalar.end
    if style in ("|", ">"):
        newline = source.find("\n", begin, end)
        if newline < 0:
            return None
        begin = newline + 1
    elif style in ("'", '"'):
        begin, end = begin + 1, end - 1
    i, j = begin, 0
    offset = max(0, min(offset, len(value)))
    while j < offset:
        if i >= end:
            return None
        s, v = source[i], value[j]
        if s == v or (v == " " and s == "\n"):
            i, j = i + 1, j + 1
        elif s in " \t\r\n" or (style == "'" and s == "'"):
            i += 1  # indentation, a folded line break, the second quote of ''
        else:
            return None
    if j < len(value):  # land on the character itself, not on indentation before it
        while i < end and source[i] != value[j] and (source[i] in " \t\r\n" or (style == "'" and source[i] == "'")):
            i += 1
    line = source.count("\n", 0, i) + 1
    col = i - (source.rfind("\n", 0, i) + 1) + 1
    return line, col


class Located(dict):
    """A mapping that knows the line/column (1-based) of itself and of each key."""

    line: int = 0
    col: int = 0
    key_lines: dict


class LocatedList(list):
    line: int = 0
    col: int = 0


def plain(node: YNode | None):
    """The located tree as plain values: Located mappings, LocatedLists, and scalars built by
    SafeLoader's constructors for their resolved tag (str, int, float, bool, None, timestamp)."""
    from yaml.constructor import SafeConstructor

    return _plain(node, SafeConstructor())


def _plain(node: YNode | None, build: yaml.constructor.SafeConstructor):
    if node is None:
        return None
    if isinstance(node, YScalar):
        from yaml.nodes import ScalarNode

        return build.construct_object(ScalarNode(node.tag, node.text, style=node.style))
    if isinstance(node, YSeq):
        out: Located | LocatedList = LocatedList(_plain(item, build) for item in node.items)
    else:
        entries = cast(YMap, node).entries  # neither a scalar nor a sequence: a mapping
        out = Located({key: _plain(value, build) for key, (_, value) in entries.items()})
        out.key_lines = {key: (k.loc.line, k.loc.col) for key, (k, _) in entries.items()}
    out.line, out.col = node.loc.line, node.loc.col
    return out


__all__ = ["Location", "Located", "LocatedList", "YMap", "YNode", "YScalar", "YSeq", "describe", "parse_yaml",
           "plain", "position_in_scalar", "read_source", "MAX_BYTES", "MAX_DEPTH", "MAX_NODES"]
