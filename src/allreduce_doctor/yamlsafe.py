"""A YAML loader built on SafeLoader that remembers where every mapping and value came from.

Used for probe specs (and available to anything else that wants `file:line` errors). Duplicate
keys are an error, not a silent overwrite.
"""

from __future__ import annotations

import yaml


class Located(dict):
    """A mapping that knows the line/column (1-based) of itself and of each key."""

    line: int = 0
    col: int = 0
    key_lines: dict


class LocatedList(list):
    line: int = 0
    col: int = 0


class DuplicateKey(Exception):
    def __init__(self, key: str, line: int, col: int) -> None:
        super().__init__(key)
        self.key, self.line, self.col = key, line, col


# libyaml's parser when available (same nodes and marks, much faster); SafeLoader's constructors.
_SafeBase = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class LocatingLoader(_SafeBase):
    def construct_mapping(self, node, deep=False):  # noqa: D401 - yaml API
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise DuplicateKey(str(key), key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            seen[key] = key_node
        mapping = Located(super().construct_mapping(node, deep=True))
        mapping.line = node.start_mark.line + 1
        mapping.col = node.start_mark.column + 1
        mapping.key_lines = {k: (n.start_mark.line + 1, n.start_mark.column + 1) for k, n in seen.items()}
        return mapping

    def construct_sequence(self, node, deep=False):
        seq = LocatedList(super().construct_sequence(node, deep=True))
        seq.line = node.start_mark.line + 1
        seq.col = node.start_mark.column + 1
        return seq


LocatingLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, LocatingLoader.construct_mapping)
LocatingLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, LocatingLoader.construct_sequence)


def load_located(text: str, filename: str, error_cls: type[Exception]):
    """Parse YAML text; syntax errors and duplicate keys become `error_cls('file:line:col: ...')`."""
    try:
        return yaml.load(text, Loader=LocatingLoader)  # noqa: S506 - SafeLoader subclass
    except DuplicateKey as dup:
        raise error_cls(f"{filename}:{dup.line}:{dup.col}: duplicate key '{dup.key}'") from None
    except yaml.MarkedYAMLError as err:
        try:  # libyaml words errors differently: the pure-Python parser's message is the stable one
            yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.MarkedYAMLError as pure:
            err = pure
        mark = err.problem_mark or err.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        raise error_cls(f"{filename}:{line}:{col}: invalid YAML: {err.problem or err.context}") from None
    except yaml.YAMLError as err:
        raise error_cls(f"{filename}: invalid YAML: {err}") from None
