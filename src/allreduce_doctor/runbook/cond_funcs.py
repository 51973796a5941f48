"""The allow-listed functions of the condition language: a registry dict, nothing else callable.

The parser checks names and argument counts at load time (unknown name -> did-you-mean).
The evaluator applies the three-valued rule before calling: an UNKNOWN argument gives UNKNOWN,
and so does a null one unless the function accepts nulls (`get`, and `min`/`max` of a list,
which skip nulls). exists() and status() take a fact name and are handled by the evaluator.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .tristate import UNKNOWN


class FuncError(Exception):
    """A function got a value of the wrong type; the evaluator adds the column."""


@dataclass(frozen=True)
class Func:
    name: str
    min_args: int
    max_args: int
    impl: Callable[..., Any] | None  # None: handled by the evaluator (exists, status)
    signature: str
    doc: str
    null_ok: bool = False


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return type(value).__name__


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _need(name: str, value: Any, ok: bool, what: str) -> None:
    if not ok:
        raise FuncError(f"{name}() expects {what}, got a {type_name(value)}")


def _len(x: Any) -> int:
    _need("len", x, isinstance(x, (str, list, dict)), "a string, list or mapping")
    return len(x)


def _abs(x: Any) -> Any:
    _need("abs", x, is_number(x), "a number")
    return abs(x)


def _extreme(pick: Callable[..., Any], name: str) -> Callable[..., Any]:
    def impl(*args: Any) -> Any:
        if len(args) == 1:
            _need(name, args[0], isinstance(args[0], (list, dict)), "a list or two or more values")
            items = list(args[0].values()) if isinstance(args[0], dict) else args[0]
            items = [v for v in items if v is not None and v is not UNKNOWN]
        elif any(v is None for v in args):
            return UNKNOWN
        else:
            items = list(args)
        if not items:
            return None
        if all(is_number(v) for v in items) or all(isinstance(v, str) for v in items):
            return pick(items)
        raise FuncError(f"{name}() expects numbers or strings")

    return impl


def _str_fn(name: str, method: Callable[[str], str]) -> Callable[[Any], str]:
    def impl(x: Any) -> str:
        _need(name, x, isinstance(x, str), "a string")
        return method(x)

    return impl


def _startswith(s: Any, prefix: Any) -> bool:
    _need("startswith", s, isinstance(s, str), "a string")
    _need("startswith", prefix, isinstance(prefix, str), "a string prefix")
    return s.startswith(prefix)


def contains(container: Any, item: Any) -> bool:
    """`item in container` for lists, mapping keys and substrings (shared with the `in` operator)."""
    if isinstance(container, str):
        if not isinstance(item, str):
            raise FuncError(f"'in' a string needs a string, got a {type_name(item)}")
        return item in container
    if isinstance(container, dict):
        if isinstance(item, (list, dict)):
            raise FuncError(f"a {type_name(item)} cannot be a mapping key")
        return item in container
    if isinstance(container, list):
        return item in container
    raise FuncError(f"'in' needs a list, mapping or string on the right, got a {type_name(container)}")


def _keys(x: Any) -> list:
    _need("keys", x, isinstance(x, dict), "a mapping")
    return list(x.keys())


def _values(x: Any) -> list:
    _need("values", x, isinstance(x, dict), "a mapping")
    return list(x.values())


def _get(container: Any, key: Any, default: Any = None) -> Any:
    if container is None:
        return default
    if isinstance(container, dict):
        if isinstance(key, (list, dict)):
            raise FuncError(f"get() key must be a string or number, got a {type_name(key)}")
        value = container.get(key)
    elif isinstance(container, list):
        _need("get", key, isinstance(key, int) and not isinstance(key, bool), "an integer index for a list")
        value = container[key] if -len(container) <= key < len(container) else None
    else:
        raise FuncError(f"get() expects a mapping or list, got a {type_name(container)}")
    return default if value is None else value


def _to_int(x: Any) -> Any:
    try:
        if isinstance(x, str):
            try:
                return int(x.strip())
            except ValueError:
                return int(float(x.strip()))
        _need("int", x, is_number(x), "a number or a string")
        return int(x)
    except (ValueError, OverflowError):
        return UNKNOWN


def _to_float(x: Any) -> Any:
    if isinstance(x, str):
        try:
            return float(x.strip())
        except ValueError:
            return UNKNOWN
    _need("float", x, is_number(x), "a number or a string")
    try:
        return float(x)
    except OverflowError:
        return UNKNOWN


def _round(x: Any, digits: Any = 0) -> Any:
    _need("round", x, is_number(x), "a number")
    _need("round", digits, isinstance(digits, int) and not isinstance(digits, bool), "whole digits")
    if not -20 <= digits <= 20:
        raise FuncError("round() digits must be between -20 and 20")
    if isinstance(x, float) and not math.isfinite(x):
        return UNKNOWN
    return round(x, digits)


def _sampled(kind: str) -> Callable[[Any, Any], Any]:
    def impl(item: Any, counter: Any) -> Any:
        _need(kind, item, isinstance(item, dict), "a sampled item (a mapping)")
        _need(kind, counter, isinstance(counter, str), "a counter name")
        table = item.get(kind)
        return table.get(counter) if isinstance(table, dict) else None

    return impl


FUNCTIONS: dict[str, Func] = {
    f.name: f
    for f in (
        Func("len", 1, 1, _len, "len(x)", "length of a string, list or mapping"),
        Func("abs", 1, 1, _abs, "abs(n)", "absolute value"),
        Func("min", 1, 99, _extreme(min, "min"), "min(list) / min(a, b, ...)", "smallest value; nulls in a list are skipped", True),
        Func("max", 1, 99, _extreme(max, "max"), "max(list) / max(a, b, ...)", "largest value; nulls in a list are skipped", True),
        Func("lower", 1, 1, _str_fn("lower", str.lower), "lower(s)", "lower-case string"),
        Func("upper", 1, 1, _str_fn("upper", str.upper), "upper(s)", "upper-case string"),
        Func("startswith", 2, 2, _startswith, "startswith(s, prefix)", "true when s starts with prefix"),
        Func("contains", 2, 2, contains, "contains(container, item)", "same as `item in container`"),
        Func("keys", 1, 1, _keys, "keys(mapping)", "the keys as a list"),
        Func("values", 1, 1, _values, "values(mapping)", "the values as a list"),
        Func("get", 2, 3, _get, "get(x, key, default)", "x[key], or default (null if not given) when absent or null", True),
        Func("int", 1, 1, _to_int, "int(x)", "integer from a number or numeric string; unknown if not numeric"),
        Func("float", 1, 1, _to_float, "float(x)", "float from a number or numeric string; unknown if not numeric"),
        Func("round", 1, 2, _round, "round(x, digits)", "rounded number"),
        Func("exists", 1, 1, None, "exists(FACT)", "true when the fact was observed ok; never unknown"),
        Func("said", 1, 1, lambda x: x is not None, "said(x)",
             "true when x holds a value the evidence showed (not unknown, null or a derived \"unknown\"); never unknown",
             True),
        Func("status", 1, 1, None, "status(FACT)", "the observation status: ok, not_applicable, missing, error"),
        Func("rate", 2, 2, _sampled("rate"), 'rate(item, "counter")',
             "per-second rate of a sampled counter: item.rate.counter; null if absent"),
        Func("delta", 2, 2, _sampled("delta"), 'delta(item, "counter")', "change of a sampled counter: item.delta.counter; null if absent"),
    )
}

QUANTIFIERS = ("any", "all", "count", "sum", "min", "max")
