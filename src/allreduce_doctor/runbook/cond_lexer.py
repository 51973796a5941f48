"""Tokenizer of the condition language (see conditions.py and CONDITIONS.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ConditionError
from ..suggest import hint

KEYWORDS = frozenset({"and", "or", "not", "in", "where", "true", "false", "null"})
# longest first, so "<=" wins over "<"
OPERATORS = ("==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "(", ")", "[", "]", ",", ":", ".")
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}
MAX_LENGTH = 10_000


@dataclass(frozen=True)
class Token:
    kind: str  # NUMBER STRING NAME KEYWORD OP EOF
    text: str  # the token as written (for keywords/operators: the word itself)
    pos: int  # 0-based offset in the expression
    value: Any = None


class ExprError(ConditionError):
    """A ConditionError that knows where in the expression it happened.

    `pos` is the 0-based offset, `detail` the message without position, `suggestion` a
    did-you-mean name or None. str() is "column N: detail" plus the did-you-mean hint.
    """

    def __init__(self, detail: str, pos: int, suggestion: str | None = None):
        self.detail, self.pos, self.suggestion = detail, pos, suggestion
        super().__init__(f"column {pos + 1}: {detail}{hint(suggestion)}")


def error(detail: str, pos: int, suggestion: str | None = None) -> ExprError:
    return ExprError(detail, pos, suggestion)


def tokenize(text: str) -> list[Token]:
    if not isinstance(text, str):
        raise error("a condition must be text", 0)
    if len(text) > MAX_LENGTH:
        raise error(f"condition longer than {MAX_LENGTH} characters", MAX_LENGTH)
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t\r\n":
            i += 1
        elif ch.isascii() and ch.isdigit():
            i = _number(text, i, tokens)
        elif ch in "'\"":
            i = _string(text, i, tokens)
        elif ch.isascii() and (ch.isalpha() or ch == "_"):
            j = i
            while j < n and text[j].isascii() and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            tokens.append(Token("KEYWORD" if word in KEYWORDS else "NAME", word, i))
            i = j
        else:
            op = next((o for o in OPERATORS if text.startswith(o, i)), None)
            if op is None:
                raise error(_bad_char_detail(ch), i)
            tokens.append(Token("OP", op, i))
            i += len(op)
    tokens.append(Token("EOF", "", n))
    return tokens


def _bad_char_detail(ch: str) -> str:
    if ch == "=":
        return "unexpected '=': use '==' to compare"
    if ch == "!":
        return "unexpected '!': use 'not' or '!='"
    if ch in "&|":
        return f"unexpected '{ch}': use 'and' / 'or'"
    return f"unexpected character {ch!r}"


def _number(text: str, i: int, tokens: list[Token]) -> int:
    n, j = len(text), i
    while j < n and text[j].isascii() and text[j].isdigit():
        j += 1
    is_float = False
    if j + 1 < n and text[j] == "." and text[j + 1].isascii() and text[j + 1].isdigit():
        is_float = True
        j += 1
        while j < n and text[j].isascii() and text[j].isdigit():
            j += 1
    if j < n and text[j] in "eE":
        k = j + 1
        if k < n and text[k] in "+-":
            k += 1
        if k < n and text[k].isascii() and text[k].isdigit():
            is_float = True
            j = k
            while j < n and text[j].isascii() and text[j].isdigit():
                j += 1
    if j < n and (text[j].isalpha() or text[j] == "_"):
        raise error(f"malformed number {text[i:j + 1]!r}", i)
    literal = text[i:j]
    try:
        value: Any = float(literal) if is_float else int(literal)
    except (ValueError, OverflowError):
        raise error(f"number {literal[:20]!r} is too large", i) from None
    tokens.append(Token("NUMBER", literal, i, value))
    return j


def _string(text: str, i: int, tokens: list[Token]) -> int:
    quote, j = text[i], i + 1
    out: list[str] = []
    while j < len(text):
        ch = text[j]
        if ch == quote:
            tokens.append(Token("STRING", text[i:j + 1], i, "".join(out)))
            return j + 1
        if ch == "\\":
            if j + 1 >= len(text):
                break
            esc = text[j + 1]
            if esc not in _ESCAPES:
                raise error(f"unknown escape '\\{esc}' in string", j)
            out.append(_ESCAPES[esc])
            j += 2
            continue
        if ch == "\n":
            break
        out.append(ch)
        j += 1
    raise error("unterminated string", i)
