"""Fuzzing: random input gives ConditionError or a result, never any other exception."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allreduce_doctor.errors import ConditionError
from allreduce_doctor.observations import STATUSES, Observation, Observations
from allreduce_doctor.runbook import walk
from allreduce_doctor.runbook.conditions import UNKNOWN, compile_condition, evaluate
from tests.runbook.helpers import FACTS

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FACT_NAMES = sorted(FACTS)
KEYS = ["state", "rate", "delta", "a", "name", "NCCL_IB_HCA", "pfc_enabled", "0"]

TOKENS = [
    "(", ")", "[", "]", ",", ":", ".", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "=", "!",
    "and", "or", "not", "in", "where", "true", "false", "null", "any", "all", "count", "sum", "min", "max",
    "len", "get", "exists", "status", "rate", "delta", "int", "round", "x", "p", "0", "1", "2.5", "1e3",
    "'s'", '"t"', "'", '"', "\\", "rdma", "rdma.ports", "nccl.env", "nccl.env.NCCL_IB_HCA", "state", "#", "@",
]


@SETTINGS
@given(st.text(max_size=200))
def test_parse_of_random_text_raises_only_condition_error(text):
    try:
        compile_condition(text, FACTS)
    except ConditionError as exc:
        assert "\n" not in str(exc) and exc.pos >= 0
        assert isinstance(exc.detail, str)


@SETTINGS
@given(st.lists(st.sampled_from(TOKENS), max_size=40), st.sampled_from(["", " "]))
def test_parse_of_token_soup_raises_only_condition_error(tokens, sep):
    try:
        compile_condition(sep.join(tokens), FACTS)
    except ConditionError:
        pass


# -- well-formed expressions over random observations -----------------------------------------
def _base():
    return st.one_of(
        st.integers(-3, 500).map(str),
        st.sampled_from(["0.5", "1e3", "true", "false", "null", "'ACTIVE'", '"a"', "[]", "[1, 2]", "['a', null]"]),
        st.tuples(st.sampled_from(FACT_NAMES), st.lists(st.sampled_from(KEYS), max_size=2)).map(
            lambda t: ".".join([t[0], *t[1]]).replace(".0", "[0]")
        ),
        st.sampled_from(["x", "x.state", "x.rate", "x['a']", "x[0]", "x.pfc_enabled"]),
        st.sampled_from([f"exists({f})" for f in FACT_NAMES] + [f"status({f})" for f in FACT_NAMES]),
    )


def _extend(child):
    binary = st.tuples(child, st.sampled_from(["and", "or", "==", "!=", "<", ">=", "in", "not in", "+", "-", "*", "/", "%"]), child)
    return st.one_of(
        binary.map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        child.map(lambda c: f"not ({c})"),
        child.map(lambda c: f"-({c})"),
        st.tuples(st.sampled_from(["len", "abs", "lower", "upper", "keys", "values", "int", "float", "round", "min", "max"]), child).map(
            lambda t: f"{t[0]}({t[1]})"
        ),
        st.tuples(st.sampled_from(["get", "startswith", "contains", "rate", "delta", "min", "max"]), child, child).map(
            lambda t: f"{t[0]}({t[1]}, {t[2]})"
        ),
        st.tuples(st.sampled_from(["any", "all", "count", "sum", "min", "max"]), child, st.one_of(st.none(), child), child).map(
            lambda t: f"{t[0]}(x in {t[1]}{'' if t[2] is None else ' where ' + t[2]}: {t[3]})"
        ),
        st.tuples(child, child).map(lambda t: f"({t[0]})[{t[1]}]"),
        st.lists(child, max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
    )


EXPRESSIONS = st.recursive(_base(), _extend, max_leaves=12)
JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(), st.text(max_size=5),
              st.sampled_from(["ACTIVE", "DOWN", "Ethernet", "3"])),
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(st.sampled_from(KEYS), c, max_size=4)),
    max_leaves=15,
)


@st.composite
def random_node(draw):
    """Random facts with random statuses; rdma.ports is always an ok list of mappings, so the
    bodies of quantifiers over it are evaluated (not cut short by an unknown collection)."""
    obs = Observations()
    items = st.dictionaries(st.sampled_from(KEYS), JSONISH, max_size=5)
    obs.add(Observation("rdma.ports", draw(st.lists(items, min_size=1, max_size=4))))
    for fact in FACT_NAMES:
        if fact == "rdma.ports":
            continue
        if draw(st.booleans()):
            obs.add(Observation(fact, draw(JSONISH), draw(st.sampled_from(STATUSES)), reason="fuzz"))
    return obs


@SETTINGS
@given(EXPRESSIONS, random_node(), st.sampled_from(["rdma.ports", "net.qos", "[1, 'a', null]", "counters.roce"]))
def test_evaluation_raises_only_condition_error(expr, node, collection):
    cond = compile_condition(f"any(x in {collection}: {expr})", FACTS)
    try:
        result = evaluate(cond, node).result
    except ConditionError:
        return
    assert result is True or result is False or result is UNKNOWN


@SETTINGS
@given(EXPRESSIONS, random_node())
def test_value_evaluation_of_bound_expressions(expr, node):
    cond = compile_condition(f"count(x in rdma.ports: ({expr}) == null) >= 0", FACTS)
    try:
        evaluate(cond, node)
    except ConditionError:
        pass


@settings(max_examples=150, deadline=None)
@given(random_node(), st.sampled_from([{}, {"validated_scale": "two_nodes"}, {"validated_scale": "full_job"}, {"validated_scale": "x"}]))
def test_walk_over_random_observations_always_gives_a_json_diagnosis(example_set, node, answers):
    diagnosis = walk(example_set, node, answers)
    assert diagnosis.verdict in ("fault", "healthy", "inconclusive")
    text = json.dumps(diagnosis.to_dict(), allow_nan=False)
    assert json.loads(text)["verdict"] == diagnosis.verdict
