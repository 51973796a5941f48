"""The cause catalogue (runbooks/catalogue/causes.yaml): the ids of docs/causes.md, each with its texts once.

The public list's rule is "add, never rename": every id of docs/causes.md stays in the catalogue, in its section;
an id beyond it is allowed only with its row in docs/causes-added.md (section, why, primary
source, and a scenario that diagnoses to it). Catalogue errors are one located line, asserted
word for word like the runbook loader's.
"""

import re
from pathlib import Path

import pytest
import yaml

from allreduce_doctor.errors import RunbookError
from allreduce_doctor.runbook import causes
from allreduce_doctor.runbook.causes import CAUSES, FAULT_IDS, HEALTHY_IDS, load_catalogue, parse_catalogue
from allreduce_doctor.runbook.model import OWNERS, SEVERITIES

# The public list of ids, in the repository.
CAUSES_MD = Path(__file__).resolve().parents[2] / "docs" / "causes.md"


def _causes_md() -> dict[str, str]:
    """id -> section heading (short form) from docs/causes.md."""
    ids, section = {}, ""
    for line in CAUSES_MD.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = re.split(r":| \(", line[3:])[0].strip()
        match = re.match(r"\|\s*`([a-z0-9_]+)`\s*\|", line)
        if match:
            ids[match.group(1)] = section
    return ids


ROOT = Path(__file__).resolve().parents[2]
ADDED_MD = ROOT / "docs" / "causes-added.md"
_ROW = re.compile(r"\|\s*`([a-z0-9_]+)`\s*\|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)\|\s*$")


def _added_rows(text: str) -> dict[str, dict]:
    """id -> {section, why, source, scenario} from the table of docs/causes-added.md."""
    rows = {}
    for line in text.splitlines():
        match = _ROW.match(line)
        if match:
            section, why, source, scenario = (g.strip() for g in match.groups()[1:])
            rows[match.group(1)] = {"section": section, "why": why, "source": source, "scenario": scenario}
    return rows


def _scenario_causes() -> dict[str, str]:
    """scenario name -> the cause it diagnoses to: evidence scenarios and node bundles."""
    out = {s["name"]: s["cause"] for s in yaml.safe_load((ROOT / "tests/evidence/scenarios.yaml").read_text())}
    for path in ROOT.glob("tests/fixtures/scenarios/*/expected.yaml"):
        out[path.parent.name] = (yaml.safe_load(path.read_text()) or {}).get("cause")
    return out


def added_problems(catalogue: dict[str, str], public: dict[str, str], rows: dict[str, dict],
                   scenarios: dict[str, str]) -> list[str]:
    """What breaks the rule, one line each: `catalogue` and `public` map id -> section."""
    problems = [f"{c}: a docs/causes.md id missing from the catalogue (never rename or drop one)"
                for c in sorted(set(public) - set(catalogue))]
    problems += [f"{c}: docs/causes.md puts it in '{public[c]}', the catalogue in '{catalogue[c]}'"
                 for c in sorted(set(public) & set(catalogue)) if public[c] != catalogue[c]]
    for c in sorted(set(catalogue) - set(public)):
        row = rows.get(c)
        if row is None:
            problems.append(f"{c}: not in docs/causes.md and no row in docs/causes-added.md")
            continue
        if row["section"] != catalogue[c]:
            problems.append(f"{c}: docs/causes-added.md says '{row['section']}', the catalogue '{catalogue[c]}'")
        if row["section"] not in set(public.values()):
            problems.append(f"{c}: '{row['section']}' is no section of docs/causes.md")
        if not (row["why"] and row["source"]):
            problems.append(f"{c}: its row needs why and the primary source")
        if scenarios.get(row["scenario"]) != c:
            problems.append(f"{c}: scenario '{row['scenario']}' does not diagnose to it")
    problems += [f"{c}: a row in docs/causes-added.md for an id the catalogue lacks or docs/causes.md already has"
                 for c in sorted(set(rows) - (set(catalogue) - set(public)))]
    return problems


def test_causes_md_ids_are_kept_and_added_ids_are_documented():
    catalogue = {c: info.section for c, info in CAUSES.items()}
    assert added_problems(catalogue, _causes_md(), _added_rows(ADDED_MD.read_text()), _scenario_causes()) == []


def test_every_added_row_names_a_catalogue_id_and_a_scenario_of_it():
    """The added table holds only ids the catalogue has, each in its section, with a scenario of it."""
    rows, scenarios = _added_rows(ADDED_MD.read_text()), _scenario_causes()
    assert len(rows) >= 5
    for cause, row in rows.items():
        assert cause in CAUSES and CAUSES[cause].section == row["section"], cause
        assert scenarios.get(row["scenario"]) == cause, cause


PUBLIC = {"socket_fallback": "Transport selection", "no_fault_found": "No fault"}
ROW = {"section": "Transport selection", "why": "w", "source": "NVIDIA/nccl src/x.cc", "scenario": "s-new"}
RULE_BREAKS = [
    ("a public id dropped", {"no_fault_found": "No fault"}, {}, {},
     ["socket_fallback: a docs/causes.md id missing from the catalogue (never rename or drop one)"]),
    ("a public id moved", {**PUBLIC, "socket_fallback": "No fault"}, {}, {},
     ["socket_fallback: docs/causes.md puts it in 'Transport selection', the catalogue in 'No fault'"]),
    ("an added id without its row", {**PUBLIC, "new_id": "Transport selection"}, {}, {},
     ["new_id: not in docs/causes.md and no row in docs/causes-added.md"]),
    ("an added id whose scenario names another cause", {**PUBLIC, "new_id": "Transport selection"},
     {"new_id": ROW}, {"s-new": "socket_fallback"}, ["new_id: scenario 's-new' does not diagnose to it"]),
    ("an added id without a scenario", {**PUBLIC, "new_id": "Transport selection"}, {"new_id": ROW}, {},
     ["new_id: scenario 's-new' does not diagnose to it"]),
    ("a row in another section", {**PUBLIC, "new_id": "No fault"}, {"new_id": ROW}, {"s-new": "new_id"},
     ["new_id: docs/causes-added.md says 'Transport selection', the catalogue 'No fault'"]),
    ("a row without its source", {**PUBLIC, "new_id": "Transport selection"}, {"new_id": dict(ROW, source="")},
     {"s-new": "new_id"}, ["new_id: its row needs why and the primary source"]),
    ("a stale row", PUBLIC, {"gone": ROW}, {},
     ["gone: a row in docs/causes-added.md for an id the catalogue lacks or docs/causes.md already has"]),
]


@pytest.mark.parametrize("catalogue, rows, scenarios, expected", [r[1:] for r in RULE_BREAKS],
                         ids=[r[0] for r in RULE_BREAKS])
def test_the_add_never_rename_rule_names_what_breaks_it(catalogue, rows, scenarios, expected):
    assert added_problems(catalogue, PUBLIC, rows, scenarios) == expected


def test_a_documented_added_id_with_its_scenario_passes():
    catalogue = {**PUBLIC, "new_id": "Transport selection"}
    assert added_problems(catalogue, PUBLIC, {"new_id": ROW}, {"s-new": "new_id"}) == []


def test_the_added_table_is_read_row_by_row():
    text = ("| id | section | why | primary source | scenario |\n|---|---|---|---|---|\n"
            "| `new_id` | Transport selection | it is new | NVIDIA/nccl src/x.cc (v2.21.5-1) | s-new |\n")
    assert _added_rows(text) == {"new_id": {"section": "Transport selection", "why": "it is new",
                                            "source": "NVIDIA/nccl src/x.cc (v2.21.5-1)", "scenario": "s-new"}}


def test_healthy_ids():
    assert {"busbw_not_proven", "expected_hardware_limit", "no_fault_found"} == HEALTHY_IDS
    assert FAULT_IDS.isdisjoint(HEALTHY_IDS) and set(CAUSES) == FAULT_IDS | HEALTHY_IDS
    assert CAUSES["no_fault_found"].section == "No fault"
    assert CAUSES["wrong_gid_index"].section == "RoCE v2 branch"
    assert CAUSES["socket_fallback"].section == "Transport selection"


def test_titles_are_one_short_line():
    for info in CAUSES.values():
        assert info.title and "\n" not in info.title and len(info.title) <= 100, info.id


def test_every_cause_has_its_texts_and_every_outcome_its_next_steps():
    for info in CAUSES.values():
        assert info.summary and "\n" not in info.summary, info.id  # folded to one paragraph
        if info.healthy:
            assert info.next_steps and not (info.severity or info.owner or info.remediation or info.verification), info.id
        else:
            assert info.severity in SEVERITIES and info.owner in OWNERS, info.id
            assert info.remediation and info.verification and not info.next_steps, info.id


def test_the_catalogue_is_read_once_per_process():
    assert load_catalogue() is load_catalogue() is causes.CAUSES
    assert causes.FAULT_IDS is causes.FAULT_IDS


GOOD = """\
socket_fallback:
  title: NCCL uses sockets
  section: Transport selection
  severity: critical
  owner: platform
  summary: Sockets.
  remediation: [fix it]
  verification: [check it]
no_fault_found:
  title: nothing found
  section: No fault
  healthy: true
  summary: Fine.
  next_steps: [load test]
"""

ERRORS = [
    ("a cause defined twice", GOOD + "socket_fallback:\n  title: again\n",
     "c.yaml:15:1: duplicate key 'socket_fallback' (first at line 1) (at socket_fallback)"),
    ("a text defined twice in one entry", GOOD.replace("  summary: Sockets.\n", "  summary: Sockets.\n  summary: Again.\n"),
     "c.yaml:7:3: duplicate key 'summary' (first at line 6) (at socket_fallback.summary)"),
    ("bad severity", GOOD.replace("severity: critical", "severity: critcal"),
     "c.yaml:4:13: severity must be one of critical, major, minor, got 'critcal' (at socket_fallback.severity)"
     " did you mean 'critical'?"),
    ("bad owner", GOOD.replace("owner: platform", "owner: netwrk"),
     "c.yaml:5:10: owner must be one of host, network, platform, got 'netwrk' (at socket_fallback.owner)"
     " did you mean 'network'?"),
    ("missing remediation", GOOD.replace("  remediation: [fix it]\n", ""),
     "c.yaml:1:1: missing required key 'remediation' (at socket_fallback)"),
    ("empty verification", GOOD.replace("verification: [check it]", "verification: []"),
     "c.yaml:8:17: 'verification' must not be empty (at socket_fallback.verification)"),
    ("a step YAML read as a mapping", GOOD.replace("remediation: [fix it]", "remediation: [run: this]"),
     "c.yaml:7:17: 'remediation' must be text, got a mapping (quote text that contains ': ')"
     " (at socket_fallback.remediation[0])"),
    ("unknown key", GOOD.replace("  summary: Sockets.\n", "  summry: Sockets.\n"),
     "c.yaml:6:3: unknown key 'summry' (at socket_fallback.summry) did you mean 'summary'?"),
    ("a healthy outcome with a severity", GOOD.replace("  healthy: true\n", "  healthy: true\n  severity: minor\n"),
     "c.yaml:13:3: 'severity' does not belong in a healthy outcome (at no_fault_found.severity)"),
    ("a cause with next steps", GOOD.replace("  verification: [check it]\n", "  verification: [check it]\n  next_steps: [x]\n"),
     "c.yaml:9:3: 'next_steps' does not belong in a cause (only healthy outcomes have it) (at socket_fallback.next_steps)"),
    ("healthy: false", GOOD.replace("healthy: true", "healthy: false"),
     "c.yaml:12:12: 'healthy' must be true (leave it out for a cause) (at no_fault_found.healthy)"),
    ("invalid id", GOOD.replace("socket_fallback:", "Socket-Fallback:"),
     "c.yaml:1:1: invalid cause id 'Socket-Fallback': use lowercase letters, digits and '_', starting with a letter"
     " (at Socket-Fallback)"),
    ("an entry that is not a mapping", "socket_fallback: sockets\n",
     "c.yaml:1:18: expected a mapping, got text (at socket_fallback)"),
    ("empty", "", "c.yaml:1:1: expected a mapping of cause ids, got an empty document (at <document>)"),
    ("unsafe tag", GOOD.replace("summary: Sockets.", "summary: !!python/object:os.system x"),
     "c.yaml:6:12: unsupported YAML tag '!!python/object:os.system' (at socket_fallback.summary)"),
]


@pytest.mark.parametrize("text, expected", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_catalogue_error_is_one_located_line(text, expected):
    with pytest.raises(RunbookError) as info:
        parse_catalogue(text, "c.yaml")
    assert str(info.value) == expected


def test_the_good_catalogue_parses():
    parsed = parse_catalogue(GOOD, "c.yaml")
    assert parsed["socket_fallback"].remediation == ("fix it",) and parsed["socket_fallback"].owner == "platform"
    assert parsed["no_fault_found"].healthy and parsed["no_fault_found"].next_steps == ("load test",)


def test_a_broken_catalogue_file_is_named(tmp_path):
    path = tmp_path / "causes.yaml"
    path.write_bytes(b"socket_fallback: \xff\n")
    with pytest.raises(RunbookError) as info:
        load_catalogue(path)
    assert str(info.value) == f"{path}:1:1: not UTF-8 text (invalid start byte at byte 17)"
