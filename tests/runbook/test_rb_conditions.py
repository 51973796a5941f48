"""The condition language: parsing, three-valued evaluation, witnesses and evidence."""

from __future__ import annotations

import pytest

from allreduce_doctor.errors import ConditionError
from allreduce_doctor.observations import Observation
from allreduce_doctor.runbook.conditions import UNKNOWN, compile_condition, evaluate
from tests.runbook.helpers import FACTS, observations

PORTS = [
    {"name": "mlx5_0/1", "link_layer": "Ethernet", "state": "ACTIVE", "rate_gbps": 400, "mtu": 4096},
    {"name": "mlx5_1/1", "link_layer": "Ethernet", "state": "DOWN", "rate_gbps": 200, "mtu": 1024},
    {"name": "mlx5_2/1", "link_layer": "InfiniBand", "state": "ACTIVE", "rate_gbps": 400, "mtu": None},
]
COUNTERS = [
    {"port": "mlx5_0/1", "rate": {"out_of_sequence": 0.0, "np_cnp_sent": 12.5}, "delta": {"out_of_sequence": 0}},
    {"port": "mlx5_1/1", "rate": {"out_of_sequence": 3.2}, "delta": {"out_of_sequence": 32}},
]
NODE = observations(
    rdma_ports=PORTS,
    nccl_env={"NCCL_IB_GID_INDEX": "3", "NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_DEBUG": "INFO"},
    gpu_gdr={"enabled": True, "module": None},
    counters_roce=COUNTERS,
    net_qos={"eth0": {"pfc_enabled": [3], "trust": "dscp"}, "eth1": {"pfc_enabled": [], "trust": "pcp"}},
    net_ipv4_forwarding=1,
    rdma_gids=Observation("rdma.gids", None, "missing", source="show_gids", reason="permission denied"),
    net_ecn=Observation("net.ecn", None, "error", reason="parse failure"),
    roce_nccl_ports=Observation("roce.nccl_ports", None, "not_applicable"),
)


def run(text: str, node=NODE):
    return evaluate(compile_condition(text, FACTS), node).result


TABLE = [
    # literals and arithmetic
    ("1 + 2 * 3 == 7", True),
    ("(1 + 2) * 3 == 9", True),
    ("10 / 4 == 2.5", True),
    ("10 % 3 == 1", True),
    ("-2 < 0", True),
    ("1 / 0 == 1", UNKNOWN),
    ("'ab' + \"cd\" == 'abcd'", True),
    ("[1, 2] + [3] == [1, 2, 3]", True),
    ("2.5e1 == 25", True),
    ("true == true", True),
    ("not false", True),
    # comparisons and membership
    ("3 in [1, 2, 3]", True),
    ("4 not in [1, 2, 3]", True),
    ("'eth' in 'eth0'", True),
    ("'x' in 'eth0'", False),
    ("'NCCL_DEBUG' in nccl.env", True),
    ("'NCCL_SOCKET_IFNAME' not in nccl.env", True),
    ("'b' < 'c'", True),
    ("1 != 2", True),
    ("null == null", UNKNOWN),
    ("null != 1", UNKNOWN),
    ("null in [1]", UNKNOWN),
    ("1 in null", UNKNOWN),
    ("null + 1 > 0", UNKNOWN),
    ("-null < 0", UNKNOWN),
    # facts and keys
    ("nccl.env.NCCL_IB_GID_INDEX == '3'", True),
    ("int(nccl.env.NCCL_IB_GID_INDEX) == 3", True),
    ("nccl.env['NCCL_IB_GID_INDEX'] == '3'", True),
    ("nccl.env.NCCL_IB_TC == '106'", UNKNOWN),  # unset key: null, compared: unknown
    ("get(nccl.env, 'NCCL_IB_TC', '0') == '0'", True),
    ("get(nccl.env, 'NCCL_IB_DISABLE') == '1'", UNKNOWN),
    ("rdma.ports[0].state == 'ACTIVE'", True),
    ("rdma.ports[-1].link_layer == 'InfiniBand'", True),
    ("rdma.ports[7].state == 'ACTIVE'", UNKNOWN),
    ("len(rdma.ports) == 3", True),
    ("gpu.gdr.enabled", True),
    ("gpu.gdr.module == 'nvidia_peermem'", UNKNOWN),
    ("net.ipv4_forwarding == 1", True),  # fact names with digits
    # not-ok facts are unknown
    ("len(rdma.gids) > 0", UNKNOWN),
    ("rdma.gids == null", UNKNOWN),
    ("any(e in net.ecn: e.roce_np)", UNKNOWN),
    ("len(roce.nccl_ports) == 0", UNKNOWN),
    # Kleene logic
    ("false and len(rdma.gids) > 0", False),
    ("len(rdma.gids) > 0 and false", False),
    ("true and len(rdma.gids) > 0", UNKNOWN),
    ("true or len(rdma.gids) > 0", True),
    ("len(rdma.gids) > 0 or true", True),
    ("false or len(rdma.gids) > 0", UNKNOWN),
    ("not len(rdma.gids) > 0", UNKNOWN),
    ("not (1 == 1) or 2 == 2", True),
    ("not 1 == 2", True),
    # exists / status never unknown
    ("exists(rdma.ports)", True),
    ("exists(rdma.gids)", False),
    ("not exists(net.ecn)", True),
    ("status(rdma.gids) == 'missing'", True),
    ("status(net.ecn) == 'error'", True),
    ("status(roce.nccl_ports) == 'not_applicable'", True),
    ("status(counters.ib) == 'missing'", True),  # never observed
    # quantifiers
    ("any(p in rdma.ports: p.state != 'ACTIVE')", True),
    ("all(p in rdma.ports: p.state == 'ACTIVE')", False),
    ("any(p in rdma.ports where p.link_layer == 'InfiniBand': p.state != 'ACTIVE')", False),
    ("all(p in rdma.ports where p.link_layer == 'InfiniBand': p.rate_gbps == 400)", True),
    ("count(p in rdma.ports: p.rate_gbps >= 400) == 2", True),
    ("count(p in rdma.ports where p.link_layer == 'Ethernet': true) == 2", True),
    ("sum(p in rdma.ports: p.rate_gbps) == 1000", True),
    ("sum(p in rdma.ports: p.mtu) == 5120", True),  # the null mtu is skipped
    ("min(p in rdma.ports: p.mtu) == 1024", True),
    ("max(p in rdma.ports where p.link_layer == 'Ethernet': p.rate_gbps) == 400", True),
    ("min(p in rdma.ports where p.state == 'GONE': p.mtu) == 0", UNKNOWN),  # min of nothing is null
    ("any(p in rdma.ports: p.mtu < 2048)", True),
    ("all(p in rdma.ports: p.mtu >= 1024)", UNKNOWN),  # true, true, null: unknown
    ("all(p in rdma.ports: p.mtu >= 2048)", False),  # one false decides
    ("all(p in rdma.ports where p.link_layer == 'Ethernet': p.mtu >= 1024)", True),
    ("all(p in rdma.ports where p.link_layer == 'InfiniBand': p.mtu >= 1024)", UNKNOWN),
    ("any(p in rdma.ports where p.link_layer == 'InfiniBand': p.mtu < 1024)", UNKNOWN),
    ("any(p in [] : true)", False),
    ("all(p in [] : false)", True),
    ("count(g in rdma.gids: true) == 0", UNKNOWN),  # unknown collection
    ("sum(g in rdma.gids: g.index) == 0", UNKNOWN),
    ("any(q in net.qos: 3 not in q.pfc_enabled)", True),  # a mapping iterates its values
    ("all(q in net.qos: q.trust == 'dscp')", False),
    ("any(p in rdma.ports: any(q in net.qos: p.mtu == 4096 and q.trust == 'pcp'))", True),
    ("any(x in [1, 2, 3]: x > 2) and all(x in [1, 2]: x < 3)", True),
    # rate / delta
    ("any(c in counters.roce: rate(c, 'out_of_sequence') > 0)", True),
    ("all(c in counters.roce: delta(c, 'out_of_sequence') == 0)", False),
    ("rate(counters.roce[0], 'np_cnp_sent') > 10", True),
    ("rate(counters.roce[1], 'np_cnp_sent') > 10", UNKNOWN),  # counter absent: null
    ("any(c in counters.roce: rate(c, 'rx_discards_phy') > 0)", UNKNOWN),
    # functions
    ("abs(-3) == 3", True),
    ("min(3, 1, 2) == 1", True),
    ("max([1, 5, 2]) == 5", True),
    ("max([1, null, 2]) == 2", True),
    ("min(1, null) == 1", UNKNOWN),
    ("lower('ABC') == 'abc' and upper('a') == 'A'", True),
    ("startswith(rdma.ports[0].name, 'mlx5')", True),
    ("contains(rdma.ports[0].name, 'mlx5_0')", True),
    ("keys(net.qos) == ['eth0', 'eth1']", True),
    ("len(values(net.qos)) == 2", True),
    ("int('12') + float('0.5') == 12.5", True),
    ("int('4: ACTIVE') == 4", UNKNOWN),
    ("round(2.567, 2) == 2.57", True),
    ("get([1, 2], 5, 9) == 9", True),
    ("len(null) == 0", UNKNOWN),
    ("nccl.env.__class__ == 1", UNKNOWN),  # a data key, read as such: absent, null
    ("nccl.env['__dict__'] == 1", UNKNOWN),
]


@pytest.mark.parametrize("text, expected", TABLE, ids=[t for t, _ in TABLE])
def test_evaluation_table(text, expected):
    assert run(text) is expected


def test_witnesses_of_any_are_the_matching_items():
    ev = evaluate(compile_condition("any(p in rdma.ports: p.state != 'ACTIVE' or p.mtu < 2048)", FACTS), NODE)
    assert ev.result is True
    assert [p["name"] for p in ev.witnesses] == ["mlx5_1/1"]
    assert ev.witness_total == 1


def test_witnesses_of_all_are_the_failing_items():
    ev = evaluate(compile_condition("all(p in rdma.ports where p.link_layer == 'Ethernet': p.state == 'ACTIVE')", FACTS), NODE)
    assert ev.result is False
    assert [p["name"] for p in ev.witnesses] == ["mlx5_1/1"]


def test_witnesses_of_count_and_min():
    ev = evaluate(compile_condition("count(p in rdma.ports: p.rate_gbps == 400) > 1", FACTS), NODE)
    assert [p["name"] for p in ev.witnesses] == ["mlx5_0/1", "mlx5_2/1"]
    ev = evaluate(compile_condition("min(p in rdma.ports: p.mtu) < 2048", FACTS), NODE)
    assert [p["name"] for p in ev.witnesses] == ["mlx5_1/1"]


def test_no_witnesses_when_any_is_false():
    ev = evaluate(compile_condition("any(p in rdma.ports: p.rate_gbps > 400)", FACTS), NODE)
    assert ev.result is False and ev.witnesses == []


def test_witnesses_are_truncated_to_20():
    many = observations(rdma_ports=[{"state": "DOWN", "i": i} for i in range(50)])
    ev = evaluate(compile_condition("any(p in rdma.ports: p.state == 'DOWN')", FACTS), many)
    assert len(ev.witnesses) == 20 and ev.witness_total == 50


def test_inner_quantifiers_record_no_witnesses():
    ev = evaluate(compile_condition("any(p in rdma.ports: any(x in [1, 2]: x == 2) and p.state == 'DOWN')", FACTS), NODE)
    assert ev.witnesses == [PORTS[1]]


def test_facts_used_and_observations():
    ev = evaluate(compile_condition("nccl.env.NCCL_IB_GID_INDEX == '3' and exists(rdma.gids)", FACTS), NODE)
    assert ev.result is False
    assert ev.facts_used == {"nccl.env.NCCL_IB_GID_INDEX": "3", "exists(rdma.gids)": False}
    assert ev.fact_of == {"nccl.env.NCCL_IB_GID_INDEX": "nccl.env", "exists(rdma.gids)": "rdma.gids"}
    assert ev.observations["rdma.gids"].reason == "permission denied"


def test_get_on_a_fact_is_recorded_as_the_key_read():
    ev = evaluate(compile_condition("get(nccl.env, 'NCCL_IB_DISABLE', '0') == '1'", FACTS), NODE)
    assert ev.result is False
    assert ev.facts_used == {"nccl.env.NCCL_IB_DISABLE": None}


def test_unknown_fact_value_is_recorded_as_unknown():
    ev = evaluate(compile_condition("len(rdma.gids) > 0", FACTS), NODE)
    assert ev.result is UNKNOWN and ev.facts_used == {"rdma.gids": UNKNOWN}


def test_longest_known_prefix_is_the_fact():
    cond = compile_condition("nccl.env.NCCL_IB_HCA == 'x' and net.ipv4_forwarding == 1", FACTS)
    assert cond.facts == {"nccl.env", "net.ipv4_forwarding"}
    longer = compile_condition("a.b.c == 1", {"a", "a.b"})
    assert longer.expr.left.fact == "a.b" and longer.expr.left.keys == ("c",)


def test_loop_variable_shadows_facts_only_inside_its_body():
    cond = compile_condition("any(rdma in rdma.ports: rdma.state == 'DOWN')", FACTS)
    assert evaluate(cond, NODE).result is True


# -- runtime errors: ConditionError, never anything else -------------------------------------
RUNTIME_ERRORS = [
    ("nccl.env.NCCL_IB_HCA", "column 1: expected true or false here, got a string"),
    ("rdma.ports[0].state < 3", "column 21: cannot compare a string with a number using '<'"),
    ("len(3) == 1", "column 1: len() expects a string, list or mapping, got a number"),
    ("any(p in nccl.env.NCCL_IB_HCA: true)", "column 10: any() cannot iterate over a string"),
    ("rdma.ports.state == 'x'", "column 1: cannot read 'state' of a list"),
    ("'a' - 'b' == 1", "column 5: cannot use '-' on a string and a string"),
    ("1 and true", "column 1: expected true or false here, got a number"),
    ("rdma.ports.__class__ == 1", "column 1: cannot read '__class__' of a list"),  # data keys, not Python attributes
    ("rdma.ports['x'] == 1", "column 11: cannot read 'x' of a list"),
    ("sum(p in rdma.ports: p.name) == 1", "column 24: sum() needs numbers, got a string"),
]


@pytest.mark.parametrize("text, message", RUNTIME_ERRORS, ids=[t for t, _ in RUNTIME_ERRORS])
def test_runtime_errors(text, message):
    with pytest.raises(ConditionError) as info:
        evaluate(compile_condition(text, FACTS), NODE)
    assert str(info.value) == message


def test_non_strict_evaluation_turns_errors_into_unknown():
    ev = evaluate(compile_condition("nccl.env.NCCL_IB_HCA", FACTS), NODE, strict=False)
    assert ev.result is UNKNOWN
    assert ev.error == "column 1: expected true or false here, got a string"
    assert ev.facts_used == {"nccl.env.NCCL_IB_HCA": "mlx5_0,mlx5_1"}


# -- load-time errors ----------------------------------------------------------------------
PARSE_ERRORS = [
    ("rdma.gid == 1", "column 1: unknown fact 'rdma.gid' did you mean 'rdma.gids'?"),
    ("nccl.envv.NCCL_IB_HCA == 'x'", "column 1: unknown fact 'nccl.envv.NCCL_IB_HCA' did you mean 'nccl.env'?"),
    ("lenn(rdma.ports) == 1", "column 1: unknown function 'lenn' did you mean 'len'?"),
    ("open('/etc/passwd')", "column 1: unknown function 'open'"),
    ("__import__('os')", "column 1: unknown function '__import__'"),
    ("len(rdma.ports, 1)", "column 1: len() takes 1 argument, got 2"),
    ("get(nccl.env)", "column 1: get() takes 2 to 3 arguments, got 1"),
    ("exists(nccl.env.X)", "column 8: exists() takes a fact name"),
    ("exists(1)", "column 8: exists() takes a fact name"),
    ("any(rdma.ports)", "column 5: any() takes the form any(VAR in EXPR: EXPR)"),
    ("any(p in rdma.ports p.state)", "column 21: expected ':' in any(VAR in EXPR: EXPR), found 'p'"),
    ("any(p in rdma.ports: q.state == 1)", "column 22: unknown fact 'q.state'"),
    ("p.state == 1 and any(p in rdma.ports: true)", "column 1: unknown fact 'p.state'"),
    ("1 < 2 < 3", "column 7: comparisons cannot be chained; join them with 'and'"),
    ("a = 1", "column 3: unexpected '=': use '==' to compare"),
    ("rdma.ports = 1", "column 12: unexpected '=': use '==' to compare"),
    ("1 && 2", "column 3: unexpected '&': use 'and' / 'or'"),
    ("!true", "column 1: unexpected '!': use 'not' or '!='"),
    ("'open", "column 1: unterminated string"),
    ("'a\\q'", "column 3: unknown escape '\\q' in string"),
    ("(1 + 2", "column 7: expected ')' to close '(', found end of condition"),
    ("[1, 2", "column 6: expected ',' or ']', found end of condition"),
    ("1 +", "column 4: unexpected end of condition"),
    ("", "column 1: empty condition"),
    ("1 2", "column 3: unexpected '2'"),
    ("12abc == 1", "column 1: malformed number '12a'"),
    ("1 == 1 where", "column 8: unexpected 'where'"),
    ("x.1", "column 1: unknown fact 'x'"),
    ("rdma.ports.1", "column 12: expected a name after '.', found '1'"),
    ("@", "column 1: unexpected character '@'"),
    ("(" * 100 + "1" + ")" * 100, "column 61: expression nested too deeply"),
    ("9" * 5000, "column 1: number '99999999999999999999' is too large"),
]


@pytest.mark.parametrize("text, message", PARSE_ERRORS, ids=[t[:40] for t, _ in PARSE_ERRORS])
def test_parse_errors(text, message):
    with pytest.raises(ConditionError) as info:
        compile_condition(text, FACTS)
    assert str(info.value) == message
    assert info.value.pos >= 0 and info.value.detail
