"""Fleet fixtures: scenario bundles laid out as a fleet, a real sshd on 127.0.0.1, a fake scontrol."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fleet.sshd import Alias, TestSshd, sshd_path

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests" / "fixtures" / "scenarios"
DATA = Path(__file__).resolve().parent / "data"
GID5 = DATA / "roce-gid-index-5.tar.gz"
# The fleet the tests compare: one node with PFC off on a RoCE port, one whose job pins another GID index.
FLEET = {"gpu01": "roce-pfc-off", "gpu02": GID5, "gpu03": "roce-healthy", "gpu04": "roce-healthy"}
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}


def bundle(scenario: str | Path) -> Path:
    return scenario if isinstance(scenario, Path) else SCENARIOS / scenario / "bundle.tar.gz"


def lay_out(folder: Path, fleet: dict[str, str | Path]) -> Path:
    """folder/NODE.tar.gz for each node: what `collect -o DIR/NODE.tar.gz` on every node leaves."""
    folder.mkdir(parents=True, exist_ok=True)
    for node, scenario in fleet.items():
        shutil.copyfile(bundle(scenario), folder / f"{node}.tar.gz")
    return folder


def doctor(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real CLI in a child process (exit code, stdout and stderr as a user sees them)."""
    return subprocess.run([sys.executable, "-m", "allreduce_doctor", *args], capture_output=True, text=True,
                          env=env or ENV, cwd=ROOT, timeout=timeout)


def as_json(proc: subprocess.CompletedProcess) -> dict:
    assert proc.stderr == "", proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory):
    """sshd with aliases gpu01..gpu04 (FLEET's bundles), live1 (this machine, live), garbage1,
    hang1 and ahang (hang), and refused1. Skipped, with the reason, where sshd is not installed."""
    if sshd_path() is None:
        pytest.skip("sshd is not installed (apt-get install openssh-server); the fleet's SSH tests need it")
    aliases = [Alias(node, replay=str(bundle(s))) for node, s in FLEET.items()]
    aliases += [Alias("live1"), Alias("garbage1", "garbage"), Alias("hang1", "hang"), Alias("ahang", "hang"),
                Alias("refused1", "refused")]
    server = TestSshd(tmp_path_factory.mktemp("sshd"), aliases)
    try:
        server.start()
    except (RuntimeError, OSError, subprocess.CalledProcessError) as err:
        server.stop()
        pytest.skip(f"cannot start a test sshd here: {err}")
    yield server
    server.stop()


@pytest.fixture
def fake_scontrol(tmp_path):
    """A `scontrol` on PATH answering from a table: {"show job 42": (rc, stdout, stderr)}."""
    def install(answers: dict[str, tuple[int, str, str]]) -> dict:
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        (bindir / "answers.json").write_text(json.dumps(answers))
        script = bindir / "scontrol"
        script.write_text(f"#!{sys.executable}\n"
                          "import json, sys\n"
                          f"answers = json.load(open({str(bindir / 'answers.json')!r}))\n"
                          "rc, out, err = answers.get(' '.join(sys.argv[1:]), [1, '', 'scontrol: unexpected arguments\\n'])\n"
                          "sys.stdout.write(out); sys.stderr.write(err); sys.exit(rc)\n")
        script.chmod(0o755)
        return {**ENV, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    return install
