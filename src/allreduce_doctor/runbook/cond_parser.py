"""Recursive-descent (Pratt) parser of the condition language: tokens -> cond_ast nodes.

Names are resolved here, once, at load time: a path whose first segment is a bound loop
variable reads that item; any other path is a fact reference, the fact being the longest
dotted prefix found in `known_facts`. Unknown facts and functions are errors with a
did-you-mean. Precedence, lowest first: or, and, not, comparisons (== != < <= > >= in,
not in; not chainable), + -, * / %, unary -, postfix (.name, [index]).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..suggest import closest
from . import cond_ast as A
from .cond_funcs import FUNCTIONS, QUANTIFIERS
from .cond_lexer import Token, error, tokenize

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
_BINDING = {"or": 10, "and": 20, "cmp": 40, "+": 50, "-": 50, "*": 60, "/": 60, "%": 60, "post": 80}
_NOT_BP = 30  # `not a == b` is `not (a == b)`
_UNARY_BP = 70
MAX_DEPTH = 60


def parse(text: str, known_facts: Iterable[str]) -> A.Expr:
    """Parse a condition; raises ExprError (a ConditionError) with the column on any problem."""
    return _Parser(text, frozenset(known_facts)).parse_all()


class _Parser:
    def __init__(self, text: str, known_facts: frozenset[str]):
        self.tokens = tokenize(text)
        self.i = 0
        self.facts = known_facts
        self.bound: list[str] = []
        self.depth = 0

    # -- token helpers -------------------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, ahead: int = 1) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        tok = self.tokens[self.i]
        if tok.kind != "EOF":
            self.i += 1
        return tok

    def at(self, text: str) -> bool:
        return self.tok.kind in ("OP", "KEYWORD") and self.tok.text == text

    def expect(self, text: str, what: str = "") -> Token:
        if not self.at(text):
            raise error(f"expected '{text}'{what}, found {_describe(self.tok)}", self.tok.pos)
        return self.advance()

    # -- grammar -------------------------------------------------------------------------
    def parse_all(self) -> A.Expr:
        if self.tok.kind == "EOF":
            raise error("empty condition", 0)
        expr = self.expression(0)
        if self.tok.kind != "EOF":
            raise error(f"unexpected {_describe(self.tok)}", self.tok.pos)
        return expr

    def expression(self, rbp: int) -> A.Expr:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise error("expression nested too deeply", self.tok.pos)
        try:
            left = self.prefix()
            while True:
                bp = self.infix_bp()
                if bp <= rbp:
                    return left
                left = self.infix(left, bp)
        finally:
            self.depth -= 1

    def infix_bp(self) -> int:
        tok = self.tok
        if tok.kind == "KEYWORD":
            if tok.text in ("or", "and"):
                return _BINDING[tok.text]
            if tok.text == "in" or (tok.text == "not" and self.peek().text == "in" and self.peek().kind == "KEYWORD"):
                return _BINDING["cmp"]
            return 0
        if tok.kind != "OP":
            return 0
        if tok.text in COMPARISONS:
            return _BINDING["cmp"]
        if tok.text in ("+", "-", "*", "/", "%"):
            return _BINDING[tok.text]
        if tok.text in (".", "["):
            return _BINDING["post"]
        return 0

    def infix(self, left: A.Expr, bp: int) -> A.Expr:
        tok = self.advance()
        if tok.text == ".":
            name = self.advance()
            if name.kind not in ("NAME", "KEYWORD"):
                raise error(f"expected a name after '.', found {_describe(name)}", name.pos)
            return A.Attr(left, name.text, name.pos)
        if tok.text == "[":
            index = self.expression(0)
            self.expect("]", " to close '['")
            return A.Index(left, index, tok.pos)
        if tok.text in ("and", "or"):
            return A.Binary(tok.text, left, self.expression(bp), tok.pos)
        if bp == _BINDING["cmp"]:
            op = tok.text
            if op == "not":
                self.advance()  # the `in` of `not in`
                op = "not in"
            right = self.expression(bp)
            if self.infix_bp() == _BINDING["cmp"]:
                raise error("comparisons cannot be chained; join them with 'and'", self.tok.pos)
            return A.Binary(op, left, right, tok.pos)
        return A.Binary(tok.text, left, self.expression(bp), tok.pos)

    def prefix(self) -> A.Expr:
        tok = self.advance()
        if tok.kind in ("NUMBER", "STRING"):
            return A.Literal(tok.value, tok.pos)
        if tok.kind == "KEYWORD":
            if tok.text in ("true", "false", "null"):
                return A.Literal({"true": True, "false": False, "null": None}[tok.text], tok.pos)
            if tok.text == "not":
                return A.Unary("not", self.expression(_NOT_BP), tok.pos)
            raise error(f"unexpected {_describe(tok)}", tok.pos)
        if tok.kind == "OP":
            if tok.text == "-":
                return A.Unary("-", self.expression(_UNARY_BP), tok.pos)
            if tok.text == "(":
                inner = self.expression(0)
                self.expect(")", " to close '('")
                return inner
            if tok.text == "[":
                return A.ListExpr(self.items("]"), tok.pos)
            raise error(f"unexpected {_describe(tok)}", tok.pos)
        if tok.kind == "NAME":
            return self.name(tok)
        raise error("unexpected end of condition", tok.pos)

    def items(self, closer: str) -> tuple[A.Expr, ...]:
        items: list[A.Expr] = []
        while not self.at(closer):
            items.append(self.expression(0))
            if not self.at(closer):
                self.expect(",", f" or '{closer}'")
        self.advance()
        return tuple(items)

    def name(self, first: Token) -> A.Expr:
        if first.text in self.bound:
            return A.VarRef(first.text, first.pos)
        if self.at("("):
            return self.call(first)
        segments = [first.text]
        while self.at(".") and self.peek().kind in ("NAME", "KEYWORD"):
            self.advance()
            segments.append(self.advance().text)
        if self.at("(") and len(segments) > 1:
            raise error("only the allow-listed functions can be called", first.pos)
        for cut in range(len(segments), 0, -1):
            fact = ".".join(segments[:cut])
            if fact in self.facts:
                return A.FactRef(fact, tuple(segments[cut:]), first.pos)
        raise error(f"unknown fact '{'.'.join(segments)}'", first.pos, self.suggest_fact(segments))

    def suggest_fact(self, segments: list[str]) -> str | None:
        for cut in range(len(segments), 0, -1):
            hit = closest(".".join(segments[:cut]), self.facts, cutoff=0.75)
            if hit:
                return hit
        return closest(segments[0], self.bound)

    def call(self, name: Token) -> A.Expr:
        open_paren = self.advance()
        if name.text in QUANTIFIERS and self.tok.kind == "NAME" and self.peek().text == "in" and self.peek().kind == "KEYWORD":
            return self.quantifier(name)
        if name.text in ("any", "all", "count", "sum"):
            raise error(f"{name.text}() takes the form {name.text}(VAR in EXPR: EXPR)", open_paren.pos + 1)
        func = FUNCTIONS.get(name.text)
        if func is None:
            raise error(f"unknown function '{name.text}'", name.pos, closest(name.text, [*FUNCTIONS, *QUANTIFIERS]))
        if func.impl is None:  # exists(FACT) / status(FACT)
            arg = self.expression(0)
            self.expect(")", f" to close {name.text}(")
            if not isinstance(arg, A.FactRef) or arg.keys:
                raise error(f"{name.text}() takes a fact name", arg.pos)
            return A.FactStatus(name.text, arg.fact, name.pos)
        args = self.items(")")
        if not func.min_args <= len(args) <= func.max_args:
            raise error(f"{name.text}() takes {_arity(func.min_args, func.max_args)}, got {len(args)}", name.pos)
        return A.Call(name.text, args, name.pos)

    def quantifier(self, name: Token) -> A.Expr:
        var = self.advance()
        if var.text in FUNCTIONS or var.text in QUANTIFIERS:
            raise error(f"'{var.text}' cannot be a loop variable", var.pos)
        self.advance()  # in
        iterable = self.expression(0)
        self.bound.append(var.text)
        try:
            where = None
            if self.at("where"):
                self.advance()
                where = self.expression(0)
            self.expect(":", f" in {name.text}(VAR in EXPR: EXPR)")
            body = self.expression(0)
            self.expect(")", f" to close {name.text}(")
        finally:
            self.bound.pop()
        return A.Quantifier(name.text, var.text, iterable, where, body, name.pos)


def _describe(tok: Token) -> str:
    if tok.kind == "EOF":
        return "end of condition"
    return f"'{tok.text}'" if len(tok.text) <= 30 else f"'{tok.text[:27]}...'"


def _arity(lo: int, hi: int) -> str:
    if lo == hi:
        return f"{lo} argument" + ("s" if lo != 1 else "")
    return f"{lo} to {hi} arguments"

