"""Issue 30 item 4: a node with no RDMA and no GPU is one verdict, not_applicable, in every output.

Before: text said "nothing to diagnose" (exit 4), but Markdown gave "Confidence: high: every check on the
path passed", `--format npd` "inconclusive: ?:", and `healthcheck` (even --strict) printed nothing and
exited 0, so a container that lost its HCAs passed a prolog."""

from __future__ import annotations

import json

import pytest

from allreduce_doctor.cli import main
from allreduce_doctor.status import EXIT_FAULT, EXIT_NOT_APPLICABLE
from tests.scenarios import nodes as N
from tests.scenarios.build import record

SUMMARY = ("Neither NVIDIA GPUs nor RDMA devices were found on this node (/sys/class/infiniband is empty or absent), "
           "so there is no NCCL network path to check here: this is not a healthy verdict.")
NPD_LINE = "not_applicable: Neither NVIDIA GPUs nor RDMA devices were found on this node ...\n"


@pytest.fixture(scope="module")
def empty(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("na") / "no-gpus-no-rdma.tar.gz"
    record(N.Node(ports=0, gpus=0), path)
    return str(path)


def out_of(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_markdown_does_not_say_every_check_passed(empty, capsys):
    code, md = out_of(capsys, "diagnose", "--interval", "0", "--snapshot", empty, "--format", "markdown")
    assert code == EXIT_NOT_APPLICABLE
    assert ("| Confidence | n/a: nothing was judged: no check applies to a node without NVIDIA GPUs and RDMA "
            "devices |") in md
    assert "every check on the path passed" not in md


def test_npd_names_not_applicable(empty, capsys):
    code, line = out_of(capsys, "diagnose", "--interval", "0", "--snapshot", empty, "--format", "npd")
    assert line == NPD_LINE and "inconclusive" not in line


@pytest.mark.parametrize("strict, code, word", [(False, EXIT_NOT_APPLICABLE, "WARNING"), (True, EXIT_FAULT, "ERROR")])
def test_healthcheck_reports_it_and_strict_fails(empty, capsys, strict, code, word):
    got, out = out_of(capsys, "healthcheck", "--snapshot", empty, *(["--strict"] if strict else []))
    assert (got, out) == (code, f"{word}: allreduce-doctor: not_applicable: {SUMMARY}\n")


@pytest.mark.parametrize("strict, code", [(False, 2), (True, 1)])
def test_healthcheck_npd_is_unknown_and_strict_non_ok(empty, capsys, strict, code):
    got, out = out_of(capsys, "healthcheck", "--snapshot", empty, "--format", "npd", *(["--strict"] if strict else []))
    assert (got, out) == (code, NPD_LINE)


def test_json_and_ticket_say_the_same_verdict(empty, capsys, tmp_path):
    from allreduce_doctor.export.ticket import build_ticket

    out_of(capsys, "diagnose", "--interval", "0", "--snapshot", empty, "--format", "json", "-o", str(tmp_path / "d.json"))
    data = json.loads((tmp_path / "d.json").read_text())
    ticket = build_ticket(data)
    assert (data["verdict"], ticket.verdict, ticket.root_cause["confidence"]) == ("not_applicable", "not_applicable", "n/a")


def test_tui_summary_is_not_in_the_healthy_style(empty, capsys, tmp_path):
    from allreduce_doctor.tui.widgets.detail import cause_markup

    out_of(capsys, "diagnose", "--interval", "0", "--snapshot", empty, "--format", "json", "-o", str(tmp_path / "d.json"))
    markup = cause_markup(json.loads((tmp_path / "d.json").read_text()))
    assert markup.startswith("[$text-muted b]") and "$text-success" not in markup.splitlines()[0]
