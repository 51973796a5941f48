"""`allreduce-doctor completion SHELL`: shtab's script from the real parser, driven in a real bash the
way bash's programmable completion calls it (COMP_WORDS, COMP_CWORD, then COMPREPLY: bash(1),
"Programmable Completion")."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from allreduce_doctor.cli import main

pytest.importorskip("shtab")


def script(capsys, shell: str) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def complete(text: str, words: list[str]) -> list[str]:
    """COMPREPLY for the last word of `words` (the word being completed)."""
    array = " ".join(f"'{w}'" for w in words)
    probe = (f"{text}\nCOMP_WORDS=({array}); COMP_CWORD={len(words) - 1}; COMP_LINE='{' '.join(words)}'; "
             "COMP_POINT=${#COMP_LINE}; _shtab_allreduce_doctor; printf '%s\\n' \"${COMPREPLY[@]}\"")
    proc = subprocess.run(["bash", "--norc", "--noprofile", "-c", probe], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    return [w for w in proc.stdout.split("\n") if w]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_commands_options_and_choices(capsys):
    text = script(capsys, "bash")
    assert text.rstrip().endswith("complete -o bashdefault -F _shtab_allreduce_doctor allreduce-doctor")
    assert complete(text, ["allreduce-doctor", "vali"]) == ["validate"]
    assert complete(text, ["allreduce-doctor", "validate", "--gpu-r"]) == ["--gpu-request"]
    assert complete(text, ["allreduce-doctor", "validate", "--gpu-request", ""]) == ["gpus-per-node", "gres", "none"]
    assert complete(text, ["allreduce-doctor", "healthcheck", "--format", ""]) == ["nhc", "prometheus", "npd", "json"]
    assert complete(text, ["allreduce-doctor", "completion", ""]) == ["bash", "zsh", "fish"]


@pytest.mark.parametrize("shell, marker", [("zsh", "#compdef allreduce-doctor"), ("fish", "complete -c allreduce-doctor")])
def test_every_shell_gets_every_command_and_option(capsys, shell, marker):
    text = script(capsys, shell)
    assert marker in text
    for word in ("validate", "healthcheck", "--gpu-request", "--mpi", "--textfile"):
        assert word in text, (shell, word)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
def test_zsh_parses_its_script(capsys, tmp_path):
    path = tmp_path / "_allreduce-doctor"
    path.write_text(script(capsys, "zsh"))
    assert subprocess.run(["zsh", "-n", str(path)], timeout=30).returncode == 0


def test_without_shtab_one_line_says_how_to_get_it(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "shtab", None)  # import shtab raises ImportError
    assert main(["completion", "bash"]) == 2
    assert capsys.readouterr().err == ("allreduce-doctor: error: shell completion needs shtab: pip install "
                                       "'allreduce-doctor[completion]' (pipx: pipx inject allreduce-doctor shtab)\n")
