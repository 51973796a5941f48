"""Every runbook error is one line, FILE:LINE:COL: MESSAGE (at YAML.PATH)[ did you mean 'x'?].

The messages are asserted word for word: they are a contract with runbook authors.
"""

from __future__ import annotations

import pytest

from allreduce_doctor.errors import DoctorError, RunbookError
from allreduce_doctor.runbook import load_runbook_text, load_runbooks
from allreduce_doctor.runbook.causes import CAUSES
from tests.runbook.helpers import FACTS

CATALOGUE_NO_FAULT = CAUSES["no_fault_found"].summary

GOOD = """\
runbook: t
title: Test
entry: a
nodes:
  a:
    title: A check
    why: Because.
    check: len(rdma.ports) > 0
    yes: {next: bad, means: yes means}
    no: {next: fine, means: no means}
    unknown: {next: fine, means: unknown means}
  bad:
    cause: socket_fallback
  fine:
    healthy: no_fault_found
    summary: Fine.
    next_steps: [load test]
"""


def error_of(text: str, filename: str = "t.yaml") -> str:
    with pytest.raises(RunbookError) as info:
        load_runbook_text(text, filename, FACTS)
    message = str(info.value)
    assert "\n" not in message
    assert isinstance(info.value, DoctorError)
    return message


def test_the_base_runbook_is_valid():
    rs = load_runbook_text(GOOD, "t.yaml", FACTS)
    assert rs.root == "t" and rs.entry == "t.a"


CASES = [
    (
        "unknown key",
        GOOD.replace("    check: len", "    chek: len"),
        "t.yaml:8:5: unknown key 'chek' (at nodes.a.chek) did you mean 'check'?",
    ),
    (
        "unknown top-level key",
        GOOD.replace("title: Test", "titel: Test"),
        "t.yaml:2:1: unknown key 'titel' (at titel) did you mean 'title'?",
    ),
    (
        "unknown outcome key",
        GOOD.replace("{next: fine, means: no means}", "{nxt: fine, means: no means}"),
        "t.yaml:10:10: unknown key 'nxt' (at nodes.a.no.nxt) did you mean 'next'?",
    ),
    (
        "neither check, ask, cause nor healthy",
        GOOD.replace("    check: len(rdma.ports) > 0\n", ""),
        "t.yaml:5:3: node 'a' needs one of 'check', 'ask', 'cause' or 'healthy' (at nodes.a)",
    ),
    (
        "two kinds",
        GOOD.replace("    check: len(rdma.ports) > 0\n", "    check: len(rdma.ports) > 0\n    ask: Really?\n"),
        "t.yaml:9:5: node 'a' has both 'check' and 'ask'; use exactly one of 'check', 'ask', 'cause' or 'healthy'"
        " (at nodes.a.ask)",
    ),
    (
        "key of another kind",
        GOOD.replace("    why: Because.\n", "    why: Because.\n    choices: {x: {next: fine, means: m}}\n"),
        "t.yaml:8:5: 'choices' does not belong in a check node (at nodes.a.choices)",
    ),
    ("missing why", GOOD.replace("    why: Because.\n", ""), "t.yaml:5:3: missing required key 'why' (at nodes.a)"),
    (
        "missing means",
        GOOD.replace("{next: fine, means: no means}", "{next: fine}"),
        "t.yaml:10:5: missing required key 'means' (at nodes.a.no)",
    ),
    (
        "missing unknown outcome",
        GOOD.replace("    unknown: {next: fine, means: unknown means}\n", ""),
        "t.yaml:5:3: missing required key 'unknown' (at nodes.a)",
    ),
    (
        "cause leaf with its own summary",
        GOOD.replace("    cause: socket_fallback\n", "    cause: socket_fallback\n    summary: Sockets.\n"),
        "t.yaml:14:5: cause texts live in the catalogue (runbooks/catalogue/causes.yaml); remove 'summary' here"
        " (at nodes.bad.summary)",
    ),
    (
        "cause leaf with its own severity",
        GOOD.replace("    cause: socket_fallback\n", "    cause: socket_fallback\n    severity: critical\n"),
        "t.yaml:14:5: cause texts live in the catalogue (runbooks/catalogue/causes.yaml); remove 'severity' here"
        " (at nodes.bad.severity)",
    ),
    (
        "cause text on a check node",
        GOOD.replace("    why: Because.\n", "    why: Because.\n    remediation: [fix it]\n"),
        "t.yaml:8:5: 'remediation' does not belong in a check node (at nodes.a.remediation)",
    ),
    (
        "healthy leaf that repeats the catalogue",
        GOOD.replace("    summary: Fine.\n", "    summary: >\n      " + CATALOGUE_NO_FAULT + "\n"),
        "t.yaml:16:5: repeats the catalogue's summary of 'no_fault_found' (runbooks/catalogue/causes.yaml);"
        " remove 'summary' here (at nodes.fine.summary)",
    ),
    (
        "empty next_steps",
        GOOD.replace("next_steps: [load test]", "next_steps: []"),
        "t.yaml:17:17: 'next_steps' must not be empty (at nodes.fine.next_steps)",
    ),
    (
        "text that is a list",
        GOOD.replace("why: Because.", "why: [a, b]"),
        "t.yaml:7:10: 'why' must be text, got a list (at nodes.a.why)",
    ),
    (
        "list item that YAML read as a mapping",
        GOOD.replace("next_steps: [load test]", "next_steps: [run: this]"),
        "t.yaml:17:18: 'next_steps' must be text, got a mapping (quote text that contains ': ')"
        " (at nodes.fine.next_steps[0])",
    ),
    (
        "unknown next target",
        GOOD.replace("{next: fine, means: no means}", "{next: fien, means: no means}"),
        "t.yaml:10:16: unknown next target 'fien' (at nodes.a.no.next) did you mean 'fine'?",
    ),
    (
        "unknown cause id",
        GOOD.replace("cause: socket_fallback", "cause: socket_fallbak"),
        "t.yaml:13:12: unknown cause 'socket_fallbak' (at nodes.bad.cause) did you mean 'socket_fallback'?",
    ),
    (
        "healthy id used as a cause",
        GOOD.replace("cause: socket_fallback", "cause: no_fault_found"),
        "t.yaml:13:12: 'no_fault_found' is a healthy outcome, not a cause; use 'healthy: no_fault_found'"
        " (at nodes.bad.cause)",
    ),
    (
        "cause id used as healthy",
        GOOD.replace("healthy: no_fault_found", "healthy: socket_fallback"),
        "t.yaml:15:14: 'socket_fallback' is a cause, not a healthy outcome; use 'cause: socket_fallback'"
        " (at nodes.fine.healthy)",
    ),
    (
        "unknown healthy id",
        GOOD.replace("healthy: no_fault_found", "healthy: no_fault"),
        "t.yaml:15:14: unknown healthy outcome 'no_fault' (at nodes.fine.healthy) did you mean 'no_fault_found'?",
    ),
    (
        "unknown fact in a condition",
        GOOD.replace("len(rdma.ports)", "len(rdma.port)"),
        "t.yaml:8:16: bad condition: unknown fact 'rdma.port' (at nodes.a.check) did you mean 'rdma.ports'?",
    ),
    (
        "unknown function in a condition",
        GOOD.replace("len(rdma.ports)", "lenn(rdma.ports)"),
        "t.yaml:8:12: bad condition: unknown function 'lenn' (at nodes.a.check) did you mean 'len'?",
    ),
    (
        "condition syntax error, plain scalar",
        GOOD.replace("len(rdma.ports) > 0", "len(rdma.ports) > > 0"),
        "t.yaml:8:30: bad condition: unexpected '>' (at nodes.a.check)",
    ),
    (
        "condition syntax error, quoted scalar",
        GOOD.replace("check: len(rdma.ports) > 0", "check: 'len(rdma.ports) =  0'"),
        "t.yaml:8:29: bad condition: unexpected '=': use '==' to compare (at nodes.a.check)",
    ),
    (
        "condition syntax error, folded block on its third line",
        GOOD.replace("check: len(rdma.ports) > 0", "check: >\n      any(p in rdma.ports:\n          p.state = 1)"),
        "t.yaml:10:19: bad condition: unexpected '=': use '==' to compare (at nodes.a.check)",
    ),
    (
        "condition cut short",
        GOOD.replace("check: len(rdma.ports) > 0", "check: 'len(rdma.ports) >'"),
        "t.yaml:8:30: bad condition: unexpected end of condition (at nodes.a.check)",
    ),
    (
        "condition error where escapes prevent mapping: falls back to the scalar",
        GOOD.replace("check: len(rdma.ports) > 0", 'check: "len(rdma.ports) > \\"x\\" ="'),
        "t.yaml:8:12: bad condition: unexpected '=': use '==' to compare (at nodes.a.check)",
    ),
    ("YAML syntax error", GOOD.replace("    why: Because.\n", "    why: Because: [\n"),
     "t.yaml:7:17: YAML syntax error: mapping values are not allowed here"),
    ("not a mapping", "- a\n- b\n", "t.yaml:1:1: expected a mapping, got a list (at <document>)"),
    ("empty document", "", "t.yaml:1:1: expected a mapping, got an empty document (at <document>)"),
    ("nodes not a mapping", "runbook: t\ntitle: T\nentry: a\nnodes: [a, b]\n",
     "t.yaml:4:8: expected a mapping, got a list (at nodes)"),
    (
        "node not a mapping",
        GOOD.replace("  fine:\n    healthy: no_fault_found\n    summary: Fine.\n    next_steps: [load test]\n",
                     "  fine: just text\n"),
        "t.yaml:14:9: expected a mapping, got text (at nodes.fine)",
    ),
    (
        "duplicate key",
        GOOD.replace("    why: Because.\n", "    why: Because.\n    why: Again.\n"),
        "t.yaml:8:5: duplicate key 'why' (first at line 7) (at nodes.a.why)",
    ),
    (
        "duplicate node",
        GOOD + "  a:\n    healthy: no_fault_found\n    summary: x\n    next_steps: [y]\n",
        "t.yaml:18:3: duplicate key 'a' (first at line 5) (at nodes.a)",
    ),
    (
        "entry not a node",
        GOOD.replace("entry: a", "entry: aa"),
        "t.yaml:3:8: entry 'aa' is not a node of runbook 't' (at entry) did you mean 'a'?",
    ),
    (
        "invalid node id",
        GOOD.replace("  bad:\n", "  bad-leaf:\n").replace("next: bad,", "next: bad-leaf,"),
        "t.yaml:12:3: invalid node id 'bad-leaf': use letters, digits and '_', starting with a letter (at nodes.bad-leaf)",
    ),
    (
        "unsafe tag",
        GOOD.replace("why: Because.", "why: !!python/object:os.system x"),
        "t.yaml:7:10: unsupported YAML tag '!!python/object:os.system' (at nodes.a.why)",
    ),
    ("recursive alias", GOOD.replace("next_steps: [load test]", "next_steps: &r [*r]"),
     "t.yaml:17:17: recursive alias (at nodes.fine.next_steps[0])"),
    ("merge key", GOOD.replace("    why: Because.\n", "    why: Because.\n    <<: {x: 1}\n"),
     "t.yaml:8:5: merge keys ('<<') are not supported (at nodes.a.<<)"),
]


@pytest.mark.parametrize("text, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_message(text, expected):
    assert error_of(text) == expected


QUESTION = """\
runbook: q
title: Q
entry: scale
nodes:
  scale:
    title: Scale
    why: Because.
    ask: How big?
    answer: validated_scale
    choices:
      two_nodes: {next: fine, means: small}
      unknown: {next: fine, means: big}
    unknown: {next: fine, means: not known}
  fine:
    healthy: no_fault_found
    summary: Fine.
    next_steps: [load test]
"""


def test_question_choice_named_unknown_is_reserved():
    assert error_of(QUESTION) == (
        "t.yaml:12:7: choice 'unknown' is reserved; put the 'unknown' outcome beside 'choices' "
        "(at nodes.scale.choices.unknown)"
    )


def test_question_needs_answer_name():
    text = QUESTION.replace("      unknown: {next: fine, means: big}\n", "").replace("    answer: validated_scale\n", "")
    assert error_of(text) == "t.yaml:5:3: missing required key 'answer' (at nodes.scale)"


def test_question_answer_must_be_a_name():
    text = QUESTION.replace("      unknown: {next: fine, means: big}\n", "").replace("validated_scale", "validated scale")
    assert error_of(text) == (
        "t.yaml:9:13: invalid answer name 'validated scale': use letters, digits and '_', starting with a letter"
        " (at nodes.scale.answer)"
    )


# -- across files ---------------------------------------------------------------------------
TRUNK = """\
runbook: trunk
title: Trunk
entry: a
nodes:
  a:
    title: A
    why: Because.
    check: len(rdma.ports) > 0
    yes: {next: roce, means: go to roce}
    no: {next: roce.pfc, means: go to roce.pfc}
    unknown: {next: fine, means: unknown}
  fine:
    healthy: no_fault_found
    summary: Fine.
    next_steps: [load test]
"""
ROCE = """\
runbook: roce
title: RoCE
entry: gid
nodes:
  gid:
    title: GID
    why: Because.
    check: len(rdma.gids) > 0
    yes: {next: pfc, means: m}
    no: {next: trunk.fine, means: m}
    unknown: {next: trunk.fine, means: m}
  pfc:
    healthy: no_fault_found
    summary: Fine.
    next_steps: [load test]
"""


def write(tmp_path, **files):
    paths = []
    for name, text in files.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def test_cross_runbook_targets_resolve(tmp_path):
    rs = load_runbooks(write(tmp_path, trunk=TRUNK, roce=ROCE), FACTS, root="trunk")
    a = rs.node("trunk.a")
    assert [o.target for o in a.outcomes.values()] == ["roce.gid", "roce.pfc", "trunk.fine"]


def test_root_is_inferred_when_not_given(tmp_path):
    rs = load_runbooks(write(tmp_path, roce=ROCE.replace("trunk.fine", "pfc"), trunk=TRUNK), FACTS)
    assert rs.root == "trunk"


def test_duplicate_runbook_id_across_files(tmp_path):
    paths = write(tmp_path, trunk=TRUNK, roce=ROCE, roce2=ROCE)
    with pytest.raises(RunbookError) as info:
        load_runbooks(paths, FACTS, root="trunk")
    assert str(info.value) == f"{paths[2]}:1:10: duplicate runbook id 'roce' (also in {paths[1]}:1:10) (at runbook)"


def test_unknown_node_in_other_runbook(tmp_path):
    paths = write(tmp_path, trunk=TRUNK.replace("roce.pfc", "roce.pcf"), roce=ROCE)
    with pytest.raises(RunbookError) as info:
        load_runbooks(paths, FACTS, root="trunk")
    assert str(info.value) == f"{paths[0]}:10:16: unknown next target 'roce.pcf' (at nodes.a.no.next) did you mean 'roce.pfc'?"


def test_unknown_runbook_target(tmp_path):
    paths = write(tmp_path, trunk=TRUNK.replace("{next: roce, means", "{next: rocee, means"), roce=ROCE)
    with pytest.raises(RunbookError) as info:
        load_runbooks(paths, FACTS, root="trunk")
    assert str(info.value) == f"{paths[0]}:9:17: unknown next target 'rocee' (at nodes.a.yes.next) did you mean 'roce'?"


def test_unknown_root(tmp_path):
    with pytest.raises(RunbookError) as info:
        load_runbooks(write(tmp_path, trunk=TRUNK, roce=ROCE), FACTS, root="trunc")
    assert str(info.value) == "no runbook 'trunc' among the loaded ones (trunk, roce) did you mean 'trunk'?"


def test_unreadable_file(tmp_path):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(RunbookError) as info:
        load_runbooks([missing], FACTS)
    assert str(info.value) == f"{missing}: cannot read: No such file or directory"


def test_not_utf8(tmp_path):
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"runbook: \xff\n")
    with pytest.raises(RunbookError) as info:
        load_runbooks([path], FACTS)
    assert str(info.value) == f"{path}:1:1: not UTF-8 text (invalid start byte at byte 9)"


def test_billion_laughs_is_bounded():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    message = error_of("\n".join(lines) + "\n")
    assert "document too large (too many nodes, or aliases expanding)" in message


def test_detour_is_true_or_false_and_marks_the_runbook():
    assert load_runbook_text(GOOD.replace("entry: a\n", "entry: a\ndetour: true\n"), "t.yaml", FACTS).runbooks["t"].detour
    assert not load_runbook_text(GOOD, "t.yaml", FACTS).runbooks["t"].detour
    assert error_of(GOOD.replace("entry: a\n", "entry: a\ndetour: maybe\n")).startswith(
        "t.yaml:4:9: detour must be one of true, false, got 'maybe'")
