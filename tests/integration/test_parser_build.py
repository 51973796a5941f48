"""A command line builds only the parser of its command: the others' arguments (and the command
modules that define them) are never built or imported."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from allreduce_doctor import cli

ROOT = Path(__file__).resolve().parents[2]


def test_diagnose_builds_only_diagnose_and_imports_no_other_command():
    code = ("import sys\nfrom allreduce_doctor import cli\n"
            "parser = cli.build_parser('diagnose')\n"
            "args = cli._parse(parser, ['diagnose', '--fabric', 'roce', '--snapshot', 'b.tar.gz'])\n"
            "print(args.command, args.fabric, args.snapshot)\n"
            "print(sorted(parser._subparsers._group_actions[0].choices))\n"
            "print(sorted(m for m in sys.modules if m.startswith(cli.COMMAND_PACKAGE + '.')))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert res.stdout == "diagnose roce b.tar.gz\n['diagnose']\n['allreduce_doctor.commands.diagnose']\n"


def test_a_command_gets_its_help_line_from_the_one_table():
    parser = cli.build_parser("fleet")
    action = parser._subparsers._group_actions[0]
    assert list(action.choices) == ["fleet"]
    assert [a.help for a in action._choices_actions] == [cli.COMMAND_HELP["fleet"]]


def test_the_command_list_and_the_whole_parser_name_every_command_in_order():
    for command in ("", None):
        action = cli.build_parser(command)._subparsers._group_actions[0]
        assert list(action.choices) == list(cli.COMMANDS)
        assert [a.help for a in action._choices_actions] == list(cli.COMMAND_HELP.values())


def test_an_unknown_option_is_reported_by_the_command_it_was_given_to(capsys):
    import pytest

    with pytest.raises(SystemExit) as stop:
        cli.main(["diagnose", "--snapsht", "x"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.endswith(
        "allreduce-doctor diagnose: error: unrecognized arguments: --snapsht x (did you mean --snapshot?)\n")


def test_a_pasted_log_reported_on_stdout_imports_neither_shutil_nor_tempfile(tmp_path):
    # argparse looks the terminal width up with shutil (and bz2, lzma) unless given it; output.py
    # and the segmenter need tempfile only for a file report and for stdin
    paste = tmp_path / "nccl.log"
    paste.write_text("gpu01:1:2 [0] NCCL INFO NET/IB : No device found.\n")
    # an interpreter's own site hooks may import them before our code runs (CI's python3 has a .pth
    # that does): forget them first, so only an import by our code brings one back
    code = ("import sys\nwatched = ('shutil', 'tempfile', 'bz2', 'lzma')\n"
            "for name in watched: sys.modules.pop(name, None)\n"
            "from allreduce_doctor.cli import main\n"
            f"code = main(['diagnose', '--evidence', {str(paste)!r}, '--format', 'json'])\n"
            "print(code, sorted(m for m in watched if m in sys.modules), file=sys.stderr)")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env)
            for _ in range(2)]  # the first writes the knowledge cache (through a temporary file)
    written = tmp_path / "cache" / "allreduce-doctor" / "knowledge.json"
    assert written.is_file(), runs[0].stderr  # else the second run misses too, and imports tempfile to write
    # 3: inconclusive (a paste alone)
    assert runs[1].stderr.splitlines()[-1] == "3 []", (runs[1].stderr, _key_now_and_stored(written))


def _key_now_and_stored(written: Path) -> tuple[str, str]:
    """What the cache key is now and what the first run stored: they differ when the second run missed."""
    import json

    from allreduce_doctor import knowledge_cache
    from allreduce_doctor.doctor import _knowledge_files

    stored = json.loads(written.read_bytes().partition(b"\n")[0]).get("key", "")
    return knowledge_cache.cache_key(_knowledge_files()), stored
