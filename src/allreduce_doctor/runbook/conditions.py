"""The condition language of runbook checks: small, safe, three-valued. No eval, no exec.

A condition is parsed ONCE, at load time, into an AST (cond_ast) by a hand-written tokenizer
(cond_lexer) and Pratt parser (cond_parser); evaluation (cond_eval) walks that AST.

Literals    1  2.5  'single'  "double"  true  false  null  [1, 2, "x"]
Names       a dotted path. If its first segment is a loop variable it reads that item
            (`p.state`); otherwise it is a fact reference: the fact is the LONGEST dotted
            prefix that probes produce (`nccl.env.NCCL_IB_GID_INDEX` -> fact `nccl.env`, key
            `NCCL_IB_GID_INDEX`). An unknown fact is a load-time error with a did-you-mean.
            `x["key"]` and `x[0]` index; a missing key or index reads null.
Operators   or  and  not  == != < <= > >=  in  not in  + - * / %  unary -  ( )
            precedence like Python; comparisons do not chain.
Quantifiers any(VAR in EXPR: EXPR)   all(...)   count(...)   sum(...)   min(...)   max(...)
            each with an optional filter: any(p in rdma.ports where p.link_layer ==
            "Ethernet": p.state != "ACTIVE"). Iterating a mapping iterates its values.
Functions   len abs min max lower upper startswith contains keys values get int float round
            exists(FACT) status(FACT) rate(item, "counter") delta(item, "counter")
            (the registry is cond_funcs.FUNCTIONS; anything else is a load-time error).

Three-valued logic: a result is True, False or UNKNOWN. A fact whose observation is not ok
is UNKNOWN (missing evidence is never healthy); comparing or computing with null is UNKNOWN;
and/or/not are Kleene's (False and UNKNOWN = False, True or UNKNOWN = True). any() is True
if some item is True, else UNKNOWN if some item is UNKNOWN, else False; all() is the dual.
count() and sum() skip UNKNOWN items, but an UNKNOWN collection gives UNKNOWN. min()/max()
of nothing is null. A condition, a filter and the operands of and/or/not must be booleans
(or null/UNKNOWN): `check: nccl.env.NCCL_IB_DISABLE` is an error; write `== "1"`.

The full reference for runbook authors is CONDITIONS.md next to this file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConditionError
from ..observations import Observation
from . import cond_ast
from .cond_eval import Evaluator, FactSource
from .cond_funcs import FUNCTIONS, QUANTIFIERS
from .cond_lexer import ExprError
from .tristate import UNKNOWN

__all__ = [
    "Condition",
    "Evaluation",
    "ExprError",
    "FUNCTIONS",
    "QUANTIFIERS",
    "UNKNOWN",
    "compile_condition",
    "evaluate",
]


@dataclass(frozen=True)
class Condition:
    text: str
    expr: cond_ast.Expr
    facts: frozenset[str]  # every fact it reads


@dataclass
class Evaluation:
    result: Any  # True, False or UNKNOWN
    witnesses: list = field(default_factory=list)  # deciding items (at most 20)
    witness_total: int = 0  # how many items decided it before truncation
    facts_used: dict[str, Any] = field(default_factory=dict)  # reference -> value
    fact_of: dict[str, str] = field(default_factory=dict)  # reference -> fact name
    observations: dict[str, Observation] = field(default_factory=dict)
    error: str | None = None  # with strict=False: why it could not be evaluated
    read_unsaid: bool = False  # a fact reference read a derived "unknown" (cond_eval.UNSAID)


def compile_condition(text: str, known_facts: Iterable[str]) -> Condition:
    """Parse `text`; raises ExprError (a ConditionError) with the column on any problem."""
    from .cond_parser import parse  # only loading parses: a cached Doctor's conditions are built

    expr = parse(text, known_facts)
    return Condition(text, expr, frozenset(cond_ast.walk_facts(expr)))


def evaluate(condition: Condition, facts: FactSource, strict: bool = True, unsaid_unknown: bool = False) -> Evaluation:
    """Evaluate a compiled condition to True / False / UNKNOWN, with its evidence.

    A ConditionError (a type mismatch in the observed data, say) is raised when `strict`;
    otherwise the result is UNKNOWN and `error` says why, with the evidence read so far.
    """
    ev = Evaluator(facts, unsaid_unknown=unsaid_unknown)
    error = None
    try:
        result = ev.truth_of(condition.expr)
    except ConditionError as exc:
        if strict:
            raise
        result, error = UNKNOWN, str(exc)
    return Evaluation(result, ev.witnesses, ev.witness_total, ev.facts_used, ev.fact_of, ev.observations, error,
                      ev.read_unsaid)
