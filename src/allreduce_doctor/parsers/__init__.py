"""Parsers: raw tool output or sysfs text to typed values.

Each parser is a function `(text: str) -> value` registered by name with `@parser("name")`.
Probe specs name parsers; the names are checked against this registry when the specs load.
A parser raises only ParseError (from allreduce_doctor.errors); anything else is a bug that
the property tests catch.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from allreduce_doctor.errors import ParseError

ParserFn = Callable[[str], Any]
_REGISTRY: dict[str, ParserFn] = {}

# Modules that register parsers; imported once, on first use of the registry.
PARSER_MODULES = (
    "sysfs",
    "ibstat",
    "ibv_devinfo",
    "show_gids",
    "ibdev2netdev",
    "ethtool",
    "mlnx_qos",
    "dcb",
    "lspci",
    "lspci_tree",
    "rdma_link",
    "nvidia_smi",
    "kernel",
    "mad",
    "ib_portinfo",
    "ethtool_modes",
    "host_tools",
    "rdma_dumps",
    "nccl_topo",
    "containers",
)
_loaded = False


def parser(name: str) -> Callable[[ParserFn], ParserFn]:
    def register(fn: ParserFn) -> ParserFn:
        if name in _REGISTRY and _REGISTRY[name] is not fn:
            raise RuntimeError(f"parser {name!r} registered twice")
        _REGISTRY[name] = fn
        return fn

    return register


def registry() -> dict[str, ParserFn]:
    global _loaded
    if not _loaded:
        for mod in PARSER_MODULES:
            importlib.import_module(f"allreduce_doctor.parsers.{mod}")
        _loaded = True
    return _REGISTRY


def parse(name: str, text: str) -> Any:
    """Run parser `name` on text; ParseError on bad input (never another exception)."""
    fn = (_REGISTRY if _loaded else registry()).get(name)  # one call per recorded file: no extra call
    if fn is None:
        raise ParseError(f"unknown parser {name!r}")
    try:
        return fn(text)
    except ParseError:
        raise
    except (ValueError, IndexError, KeyError, TypeError, AttributeError) as err:  # a parser bug must not crash a run
        raise ParseError(f"{name}: cannot parse input ({type(err).__name__}: {err})") from err


__all__ = ["ParseError", "parser", "registry", "parse"]
