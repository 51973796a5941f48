"""The front end says what it does: --answer checked, --export with --format refused, collect -o
rules, unknown commands and options with a did-you-mean, one --interval range, help with exit codes."""

from __future__ import annotations

import pytest

from allreduce_doctor import capture as capture_module
from allreduce_doctor.cli import main
from tests.integration.test_cli import bundle

ERR = "allreduce-doctor: error: "


def failing(capsys, *argv) -> str:
    """Run the CLI expecting exit 2; its stderr."""
    assert main(list(argv)) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(("answer", "message"), [
    ("nosuch=1", "--answer nosuch: no question or setting has this name (known: busbw_method, validated_scale, gdr, gpu_model, link_gbps, measured_busbw, nccl_ib_tc, nic_pcie_gen, nic_pcie_width, nic_rate_gbps, nics_per_node, nvlink_links, nvswitch, pcie_gen, pfc_priority, roce_mode)\n"),
    ("validated_scal=two_nodes",
     "--answer validated_scal: no question or setting has this name (known: busbw_method, validated_scale, gdr, gpu_model, link_gbps, measured_busbw, nccl_ib_tc, nic_pcie_gen, nic_pcie_width, nic_rate_gbps, nics_per_node, nvlink_links, nvswitch, pcie_gen, pfc_priority, roce_mode) did you mean 'validated_scale'?\n"),
    ("validated_scale=bogus", "--answer validated_scale=bogus: expected one of two_nodes, full_job\n"),
    ("validated_scale=two_node",
     "--answer validated_scale=two_node: expected one of two_nodes, full_job did you mean 'two_nodes'?\n"),
])
def test_answers_are_checked_against_the_questions(capsys, answer, message):
    assert failing(capsys, "diagnose", "--snapshot", bundle("roce-healthy"), "--answer", answer) == ERR + message


def test_a_known_answer_is_taken(capsys):
    assert main(["diagnose", "--snapshot", bundle("roce-healthy"), "--answer", "validated_scale=full_job"]) == 0


def test_export_with_format_is_refused_and_writes_nothing(capsys, tmp_path):
    out = tmp_path / "d.json"
    err = failing(capsys, "diagnose", "--snapshot", bundle("roce-pfc-off"), "--export", "github",
                  "--format", "json", "-o", str(out))
    assert err == ERR + ("--export github with --format json: --export writes the ticket document instead of the "
                         "report; drop one, or write the report with -o FILE and run "
                         "`allreduce-doctor export FILE --to github`\n")
    assert not out.exists()


@pytest.fixture
def no_recording(monkeypatch):
    """collect's checks run before anything is read: a record() call fails the test."""
    monkeypatch.setattr(capture_module, "record", lambda *a, **k: pytest.fail("recorded despite a bad -o"))


def test_collect_refuses_a_missing_parent(capsys, tmp_path, no_recording):
    target = tmp_path / "nope" / "b.tar.gz"
    err = failing(capsys, "collect", "-o", str(target))
    assert err == ERR + f"-o {target}: the folder {target.parent} does not exist; create it first\n"
    assert not target.parent.exists()


def test_collect_refuses_a_name_that_is_neither_a_directory_nor_tar_gz(capsys, tmp_path, no_recording):
    err = failing(capsys, "collect", "-o", str(tmp_path / "y.zip"))
    assert err == ERR + f"-o {tmp_path / 'y.zip'}: a bundle is a directory or a file ending in .tar.gz; " \
                        "name it y.tar.gz or give a directory\n"


def test_collect_asks_for_force_to_replace_a_bundle(capsys, tmp_path, no_recording):
    old = tmp_path / "b.tar.gz"
    old.write_bytes(b"earlier bundle")
    err = failing(capsys, "collect", "-o", str(old))
    assert err == ERR + f"-o {old}: already exists; add --force to replace the bundle there\n"
    assert old.read_bytes() == b"earlier bundle"


def test_collect_with_force_goes_on(monkeypatch, tmp_path, capsys):
    old = tmp_path / "b.tar.gz"
    old.write_bytes(b"earlier bundle")
    monkeypatch.setattr(capture_module, "record", lambda host, out, interval, progress: (out, capture_module.Observations()))
    monkeypatch.setattr(capture_module, "summarize", lambda path, obs: f"wrote {path}")
    assert main(["collect", "-o", str(old), "--force"]) == 0
    assert capsys.readouterr().out == f"wrote {old}\n"


def test_unknown_command_has_a_did_you_mean(capsys):
    assert failing(capsys, "diagnos") == ERR + ("unknown command 'diagnos' (did you mean diagnose?); commands: "
                                                "diagnose, collect, probes, runbook, export, fleet, healthcheck, validate, watch, completion\n")


@pytest.mark.parametrize("argv", [["diagnose", "--fabrik", "roce"], ["--fabrik", "roce"]])
def test_unknown_option_is_the_commands_with_a_did_you_mean(capsys, argv):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert err.startswith("usage: allreduce-doctor diagnose ")
    assert err.endswith("allreduce-doctor diagnose: error: unrecognized arguments: --fabrik roce (did you mean --fabric?)\n")


@pytest.mark.parametrize("command", ["diagnose", "watch", "collect"])
def test_one_live_interval_range(capsys, command, tmp_path, no_recording):
    extra = ["-o", str(tmp_path / "b.tar.gz")] if command == "collect" else []
    assert failing(capsys, command, "--interval", "0", *extra) == ERR + "--interval 0: expected 0.1 to 600 seconds\n"


def test_a_bundle_replays_at_interval_zero(capsys):
    assert main(["diagnose", "--snapshot", bundle("roce-pfc-off"), "--interval", "0"]) == 1


@pytest.mark.parametrize(("command", "words"), [
    ("diagnose", ["Diagnose this node, a snapshot bundle or pasted logs", "examples:",
                  "4 nothing to diagnose here (no GPUs and no RDMA ports)"]),
    ("collect", ["Capture what the probes read", "examples:", "exit codes: 0 done, 2 bad input"]),
    ("watch", ["examples:", "exit codes: 0 done, 2 bad input"]),
    ("fleet", ["exit codes: 0 nothing found, 1 fault found"]),
])
def test_each_command_help_has_description_examples_and_exit_codes(capsys, command, words):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for word in words:
        assert " ".join(word.split()) in out


def test_top_level_help_says_it_opens_the_ui(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "on a terminal it opens the terminal UI" in " ".join(capsys.readouterr().out.split())


def test_the_readme_transcript_is_what_diagnose_prints(capsys, monkeypatch):
    from tests.integration.test_cli import ROOT

    monkeypatch.chdir(ROOT)
    readme = (ROOT / "README.md").read_text()
    start = readme.index("```\n", readme.index("## What it prints")) + 4
    transcript = readme[start:readme.index("```\n", start)]
    assert main(["diagnose", "--snapshot", "examples/roce-pfc-off.tar.gz"]) == 1
    assert capsys.readouterr().out == transcript


def test_the_readme_quick_start_uses_a_venv_and_says_what_the_tests_need():
    from tests.integration.test_cli import ROOT

    quick = (ROOT / "README.md").read_text().split("## Quick start")[1].split("\n## ")[0]
    assert "python3 -m venv .venv && . .venv/bin/activate" in quick
    assert "externally-managed-environment" in quick
    assert "`tmux`" in quick and "`sshd`" in quick and "minutes" in quick
