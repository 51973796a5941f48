"""Evaluator of parsed conditions over a node's observations, in three-valued logic.

A fact whose observation is not ok is UNKNOWN; a null (missing key, absent counter) compared
or computed with is UNKNOWN; and/or/not are Kleene's. While evaluating, the Evaluator records
what the walk shows as evidence: `observations` (every fact consulted), `facts_used` (each
reference as written -> the value read) and `witnesses` (the items that decided the outermost
quantifiers: the ports that matched an any(), the ones that failed an all()).
Any problem raises ExprError (a ConditionError) with the column of the offending node.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..observations import NOT_APPLICABLE, OK, Observation
from . import cond_ast as A
from .cond_funcs import FUNCTIONS, FuncError, contains, is_number, type_name
from .cond_lexer import ExprError
from .tristate import UNKNOWN, kleene_and, kleene_not, kleene_or

MAX_WITNESSES = 20
# The value a derived fact's field holds when the evidence did not show it (evidence/job_summary.py: log.job.scope,
# log.job.gdr.state, gid/mtu verdicts). The Evaluator notes a read of it; with unsaid_unknown it reads UNKNOWN, so
# an outcome that leads to a fault never rests on it (runbook/walk.py decide).
UNSAID = "unknown"
MAX_LIST = 100_000
MAX_INT_BITS = 4096
_ARITH = {"+", "-", "*", "/", "%"}
_ORDER = {"<", "<=", ">", ">="}


class FactSource(Protocol):
    def get(self, fact: str) -> Observation: ...


def _absent(value: Any) -> bool:
    return value is UNKNOWN or value is None


class Evaluator:
    def __init__(self, facts: FactSource, max_witnesses: int = MAX_WITNESSES, unsaid_unknown: bool = False):
        self.facts = facts
        self.unsaid_unknown = unsaid_unknown  # read UNSAID as UNKNOWN (the walk, before it lets a fault rest on it)
        self.read_unsaid = False  # some fact reference read UNSAID
        self.max_witnesses = max_witnesses
        self.observations: dict[str, Observation] = {}
        self.facts_used: dict[str, Any] = {}  # reference text -> value read (UNKNOWN if not ok)
        self.fact_of: dict[str, str] = {}  # reference text -> fact name
        self.witnesses: list[Any] = []
        self.witness_total = 0
        self._scope: dict[str, Any] = {}
        self._depth = 0  # quantifier nesting

    # -- entry points --------------------------------------------------------------------
    def truth_of(self, expr: A.Expr) -> Any:
        """True, False or UNKNOWN; a non-boolean result is an error."""
        try:
            return self.truth(expr)
        except RecursionError:
            raise ExprError("condition too deeply nested to evaluate", expr.pos) from None

    def value_of(self, expr: A.Expr) -> Any:
        try:
            return self.eval(expr)
        except RecursionError:
            raise ExprError("condition too deeply nested to evaluate", expr.pos) from None

    # -- core ----------------------------------------------------------------------------
    def truth(self, expr: A.Expr) -> Any:
        value = self.eval(expr)
        if value is True or value is False:
            return value
        if _absent(value):
            return UNKNOWN
        raise ExprError(f"expected true or false here, got a {type_name(value)}", expr.pos)

    def eval(self, node: A.Expr) -> Any:
        method = getattr(self, "_" + type(node).__name__)
        return method(node)

    def _Literal(self, node: A.Literal) -> Any:
        return node.value

    def _ListExpr(self, node: A.ListExpr) -> Any:
        items = [self.eval(item) for item in node.items]
        return UNKNOWN if any(item is UNKNOWN for item in items) else items

    def _VarRef(self, node: A.VarRef) -> Any:
        return self._scope[node.name]

    def observe(self, fact: str) -> Observation:
        obs = self.observations.get(fact)
        if obs is None:
            obs = self.facts.get(fact)
            self.observations[fact] = obs
        return obs

    def _FactRef(self, node: A.FactRef) -> Any:
        obs = self.observe(node.fact)
        # not_applicable carries a known value (e.g. [] for "no such hardware"); other statuses are unknown
        usable = obs.status == OK or (obs.status == NOT_APPLICABLE and obs.value is not None)
        value = obs.value if usable else UNKNOWN
        for key in node.keys:
            value = self._read(value, key, node.pos)
        if node.keys and value == UNSAID:  # a derived field's own word for "not shown"
            self.read_unsaid = True
            if self.unsaid_unknown:
                value = UNKNOWN
        self.facts_used[node.text] = value
        self.fact_of[node.text] = node.fact
        return value

    def _FactStatus(self, node: A.FactStatus) -> Any:
        obs = self.observe(node.fact)
        result = obs.status == OK if node.func == "exists" else str(obs.status)
        ref = f"{node.func}({node.fact})"
        self.facts_used[ref] = result
        self.fact_of[ref] = node.fact
        return result

    def _read(self, value: Any, key: Any, pos: int) -> Any:
        if _absent(value):
            return value
        if isinstance(value, dict):
            if isinstance(key, (list, dict)):
                raise ExprError(f"a {type_name(key)} cannot be a mapping key", pos)
            return value.get(key)
        if isinstance(value, (list, str)) and isinstance(key, int) and not isinstance(key, bool):
            return value[key] if -len(value) <= key < len(value) else None
        raise ExprError(f"cannot read {_shown(key)} of a {type_name(value)}", pos)

    def _Attr(self, node: A.Attr) -> Any:
        return self._read(self.eval(node.obj), node.name, node.pos)

    def _Index(self, node: A.Index) -> Any:
        obj = self.eval(node.obj)
        key = self.eval(node.index)
        if _absent(key):
            return UNKNOWN
        return self._read(obj, key, node.pos)

    def _Unary(self, node: A.Unary) -> Any:
        if node.op == "not":
            return kleene_not(self.truth(node.operand))
        value = self.eval(node.operand)
        if _absent(value):
            return UNKNOWN
        if not is_number(value):
            raise ExprError(f"cannot negate a {type_name(value)}", node.pos)
        return -value

    def _Binary(self, node: A.Binary) -> Any:
        op = node.op
        if op == "and":
            left = self.truth(node.left)
            return False if left is False else kleene_and(left, self.truth(node.right))
        if op == "or":
            left = self.truth(node.left)
            return True if left is True else kleene_or(left, self.truth(node.right))
        left, right = self.eval(node.left), self.eval(node.right)
        if _absent(left) or _absent(right):
            return UNKNOWN
        if op in ("==", "!="):
            return (left == right) == (op == "==")
        if op in ("in", "not in"):
            try:
                found = contains(right, left)
            except FuncError as exc:
                raise ExprError(str(exc), node.pos) from None
            return found if op == "in" else not found
        if op in _ORDER:
            return _order(op, left, right, node.pos)
        return _arith(op, left, right, node.pos)

    def _Call(self, node: A.Call) -> Any:
        func = FUNCTIONS[node.name]
        fresh = set(self.facts_used)
        args = [self.eval(arg) for arg in node.args]
        if node.name == "get" and isinstance(node.args[0], A.FactRef) and isinstance(args[1], str):
            self._narrow(node.args[0], args[0], args[1], fresh)
        if node.name == "said":  # whether the evidence showed it: the one call an unknown argument decides
            return not _absent(args[0])
        if any(arg is UNKNOWN for arg in args):
            return UNKNOWN
        if not func.null_ok and any(arg is None for arg in args):
            return UNKNOWN
        try:
            return func.impl(*args)  # type: ignore[misc]
        except FuncError as exc:
            raise ExprError(str(exc), node.pos) from None
        except (OverflowError, ValueError):
            return UNKNOWN

    def _narrow(self, ref: A.FactRef, container: Any, key: str, before: set[str]) -> None:
        """get(FACT, "KEY", d): record the evidence as FACT.KEY, the value actually read."""
        if ref.text not in before:
            del self.facts_used[ref.text]
            del self.fact_of[ref.text]
        value = container.get(key) if isinstance(container, dict) else None if container is not UNKNOWN else UNKNOWN
        self.facts_used[f"{ref.text}.{key}"] = value
        self.fact_of[f"{ref.text}.{key}"] = ref.fact

    def _Quantifier(self, node: A.Quantifier) -> Any:
        coll = self.eval(node.iterable)
        if _absent(coll):
            return UNKNOWN
        if isinstance(coll, dict):
            items = list(coll.values())
        elif isinstance(coll, list):
            items = coll
        else:
            raise ExprError(f"{node.kind}() cannot iterate over a {type_name(coll)}", node.iterable.pos)
        top = self._depth == 0
        saved = self._scope.get(node.var, _NOTHING)
        self._depth += 1
        try:
            if node.kind in ("any", "all", "count"):
                result, deciding = self._decide(node, items)
            else:
                result, deciding = self._aggregate(node, items)
        finally:
            self._depth -= 1
            if saved is _NOTHING:
                self._scope.pop(node.var, None)
            else:
                self._scope[node.var] = saved
        if top and deciding:
            self.witness_total += len(deciding)
            room = self.max_witnesses - len(self.witnesses)
            self.witnesses.extend(deciding[: max(room, 0)])
        return result

    def _filter(self, node: A.Quantifier, item: Any) -> Any:
        self._scope[node.var] = item
        return True if node.filter is None else self.truth(node.filter)

    def _decide(self, node: A.Quantifier, items: list) -> tuple[Any, list]:
        trues, falses, unknown = [], [], False
        for item in items:
            keep = self._filter(node, item)
            if keep is False:
                continue
            body = self.truth(node.body)
            if node.kind == "all":
                value = kleene_or(kleene_not(keep), body)
            else:
                value = kleene_and(keep, body)
            if value is True:
                trues.append(item)
            elif value is False:
                falses.append(item)
            else:
                unknown = True
        if node.kind == "count":
            return len(trues), trues
        if node.kind == "any":
            return (True, trues) if trues else (UNKNOWN if unknown else False, [])
        return (False, falses) if falses else (UNKNOWN if unknown else True, [])

    def _aggregate(self, node: A.Quantifier, items: list) -> tuple[Any, list]:
        picked: list[tuple[Any, Any]] = []
        for item in items:
            if self._filter(node, item) is not True:
                continue
            value = self.eval(node.body)
            if _absent(value):
                continue
            if not is_number(value) and not (node.kind != "sum" and isinstance(value, str)):
                raise ExprError(f"{node.kind}() needs numbers, got a {type_name(value)}", node.body.pos)
            picked.append((value, item))
        if node.kind == "sum":
            total: Any = 0
            for value, _ in picked:
                total = _arith("+", total, value, node.pos)
            return total, []
        if not picked:
            return None, []
        if not (all(is_number(v) for v, _ in picked) or all(isinstance(v, str) for v, _ in picked)):
            raise ExprError(f"{node.kind}() cannot compare numbers with strings", node.body.pos)
        choose = min if node.kind == "min" else max
        best = choose(picked, key=lambda pair: pair[0])
        return best[0], [best[1]]


_NOTHING = object()


def _shown(key: Any) -> str:
    text = repr(key)
    return text if len(text) <= 40 else text[:37] + "..."


def _order(op: str, left: Any, right: Any, pos: int) -> bool:
    if not ((is_number(left) and is_number(right)) or (isinstance(left, str) and isinstance(right, str))):
        raise ExprError(f"cannot compare a {type_name(left)} with a {type_name(right)} using '{op}'", pos)
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


def _arith(op: str, left: Any, right: Any, pos: int) -> Any:
    if op == "+" and isinstance(left, str) and isinstance(right, str):
        return left + right
    if op == "+" and isinstance(left, list) and isinstance(right, list):
        if len(left) + len(right) > MAX_LIST:
            raise ExprError("list too long", pos)
        return left + right
    if not (is_number(left) and is_number(right)):
        raise ExprError(f"cannot use '{op}' on a {type_name(left)} and a {type_name(right)}", pos)
    if op in ("/", "%") and right == 0:
        return UNKNOWN
    try:
        if op == "+":
            result = left + right
        elif op == "-":
            result = left - right
        elif op == "*":
            result = left * right
        elif op == "/":
            result = left / right
        else:
            result = left % right
    except OverflowError:
        return UNKNOWN
    if isinstance(result, int) and result.bit_length() > MAX_INT_BITS:
        raise ExprError("number too large", pos)
    return result
