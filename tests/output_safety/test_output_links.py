"""`-o FILE` and `fleet --per-node DIR`: a planted symbolic link is replaced, never written through."""

from __future__ import annotations

import os
import stat

import pytest

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.output import write_output
from tests.fleet.conftest import lay_out
from tests.fleet.test_fleet_snapshots import run_cli


def test_a_link_at_the_target_is_replaced_and_its_target_kept(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "report.txt"
    out.symlink_to(victim)
    write_output("the report\n", str(out))
    assert victim.read_text() == "precious\n"
    assert not out.is_symlink()
    assert out.read_text() == "the report\n"


def test_the_old_predictable_temp_name_is_not_followed(tmp_path):
    """The old writer wrote FILE.tmp-<pid>: a link planted there had its target overwritten."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "report.txt"
    (tmp_path / f"report.txt.tmp-{os.getpid()}").symlink_to(victim)
    write_output("the report\n", str(out))
    assert victim.read_text() == "precious\n"
    assert out.read_text() == "the report\n"
    leftovers = sorted(p.name for p in tmp_path.iterdir())
    assert leftovers == ["report.txt", f"report.txt.tmp-{os.getpid()}", "victim"]


def test_a_new_file_is_0644_and_an_old_one_keeps_its_mode(tmp_path):
    out = tmp_path / "new.md"
    write_output("x", str(out))
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    out.chmod(0o600)
    write_output("y", str(out))
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert out.read_text() == "y"


def test_a_device_is_written_in_place(tmp_path):
    write_output("discarded\n", os.devnull)
    link = tmp_path / "null"
    link.symlink_to(os.devnull)
    write_output("discarded\n", str(link))
    assert link.is_symlink()


def test_a_directory_is_one_line_error(tmp_path):
    with pytest.raises(DoctorError) as err:
        write_output("x", str(tmp_path))
    assert str(err.value) == f"cannot write {tmp_path}: Is a directory"
    assert sorted(tmp_path.iterdir()) == []


def test_per_node_writes_replace_a_planted_link(tmp_path, capsys):
    folder = lay_out(tmp_path / "b", {"e1": "roce-pfc-off", "e2": "roce-healthy"})
    nodes = tmp_path / "nodes"
    nodes.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (nodes / "e1.json").symlink_to(victim)
    run_cli(capsys, "--snapshots", str(folder), "--per-node", str(nodes))
    assert victim.read_text() == "precious\n"
    assert not (nodes / "e1.json").is_symlink()
    assert '"pfc_not_enabled"' in (nodes / "e1.json").read_text()
    assert sorted(p.name for p in nodes.iterdir()) == ["e1.json", "e2.json"]
