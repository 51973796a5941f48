"""The AST of a parsed condition. Built once at load time by cond_parser, walked by cond_eval.

Every node keeps `pos`, the 0-based offset of its first character in the expression text, so
evaluation errors point at the right column too.
"""

from __future__ import annotations

from dataclasses import dataclass  # every class has a docstring: dataclass() makes a missing one with inspect.signature
from typing import Any


@dataclass(frozen=True)
class Literal:
    """A number, string, boolean or null written in the condition."""

    value: Any
    pos: int


@dataclass(frozen=True)
class ListExpr:
    """A list written in the condition: `[a, b]`."""

    items: tuple[Expr, ...]
    pos: int


@dataclass(frozen=True)
class FactRef:
    """A fact and the keys read below it: `nccl.env.NCCL_IB_HCA` -> fact nccl.env, keys (NCCL_IB_HCA,)."""

    fact: str
    keys: tuple[str, ...]
    pos: int

    @property
    def text(self) -> str:
        return ".".join((self.fact, *self.keys))


@dataclass(frozen=True)
class VarRef:
    """A quantifier's variable: the `p` of `any(p in rdma.ports: ...)`."""

    name: str
    pos: int


@dataclass(frozen=True)
class Attr:
    """A field of a value: `p.state`."""

    obj: Expr
    name: str
    pos: int


@dataclass(frozen=True)
class Index:
    """An item of a value: `x[0]`, `env['NCCL_IB_HCA']`."""

    obj: Expr
    index: Expr
    pos: int


@dataclass(frozen=True)
class Unary:
    """`-x` or `not x`."""

    op: str  # "-" or "not"
    operand: Expr
    pos: int


@dataclass(frozen=True)
class Binary:
    """Two operands and an operator: comparisons, `in`, `and`/`or`, arithmetic."""

    op: str  # and or == != < <= > >= in "not in" + - * / %
    left: Expr
    right: Expr
    pos: int


@dataclass(frozen=True)
class Call:
    """One of the condition language's functions (cond_funcs) and its arguments."""

    name: str
    args: tuple[Expr, ...]
    pos: int


@dataclass(frozen=True)
class FactStatus:
    """exists(FACT) / status(FACT): about the observation itself, never UNKNOWN."""

    func: str
    fact: str
    pos: int


@dataclass(frozen=True)
class Quantifier:
    """any / all / count / sum / min / max (VAR in ITERABLE [where FILTER]: BODY)."""

    kind: str
    var: str
    iterable: Expr
    filter: Expr | None
    body: Expr
    pos: int


Expr = Literal | ListExpr | FactRef | VarRef | Attr | Index | Unary | Binary | Call | FactStatus | Quantifier


def walk_facts(node: Expr) -> set[str]:
    """Every fact name the expression reads."""
    found: set[str] = set()
    stack: list[Any] = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, (FactRef, FactStatus)):
            found.add(cur.fact)
        elif isinstance(cur, tuple):
            stack.extend(cur)
        elif cur is not None and hasattr(cur, "__dataclass_fields__"):
            stack.extend(getattr(cur, f) for f in cur.__dataclass_fields__)
    return found


def walk_var_attrs(node: Expr) -> list[str]:
    """The record attributes the expression reads (`p.state` of `any(p in rdma.ports: p.state ...)`),
    in the order they are written: what decides a witness record, so a rendering shows them first."""
    found: list[tuple[int, str]] = []
    stack: list[Any] = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, Attr) and isinstance(cur.obj, VarRef):
            found.append((cur.pos, cur.name))
        if isinstance(cur, tuple):
            stack.extend(cur)
        elif cur is not None and hasattr(cur, "__dataclass_fields__"):
            stack.extend(getattr(cur, f) for f in cur.__dataclass_fields__)
    return list(dict.fromkeys(name for _, name in sorted(found)))
