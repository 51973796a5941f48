"""Healthcheck fixtures: the CLI in a child process and a fake `scontrol` that records its calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "tests" / "fixtures" / "scenarios"
EXAMPLES = ROOT / "examples"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
ENV.pop("SLURMD_NODENAME", None)


def bundle(name: str) -> str:
    return str(SCENARIOS / name / "bundle.tar.gz")


def doctor(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """The real CLI in a child process: exit code, stdout and stderr as Slurm or NPD sees them."""
    return subprocess.run([sys.executable, "-m", "allreduce_doctor", *args], capture_output=True, text=True,
                          env=env or ENV, cwd=ROOT, timeout=timeout)


class FakeScontrol:
    """`scontrol` on PATH: answers {"show node gpu01": (rc, stdout, stderr)}, records every argv."""

    def __init__(self, bindir: Path, answers: dict[str, tuple[int, str, str]]) -> None:
        bindir.mkdir(exist_ok=True)
        self.calls_file = bindir / "calls.jsonl"
        (bindir / "answers.json").write_text(json.dumps(answers))
        script = bindir / "scontrol"
        script.write_text(
            f"#!{sys.executable}\n"
            "import json, sys\n"
            f"with open({str(self.calls_file)!r}, 'a') as fh:\n"
            "    fh.write(json.dumps(sys.argv[1:]) + '\\n')\n"
            f"answers = json.load(open({str(bindir / 'answers.json')!r}))\n"
            "key = ' '.join(sys.argv[1:])\n"
            "default = [0, '', ''] if sys.argv[1:2] == ['update'] else [1, '', 'scontrol: unexpected arguments\\n']\n"
            "rc, out, err = answers.get(key, default)\n"
            "sys.stdout.write(out); sys.stderr.write(err); sys.exit(rc)\n")
        script.chmod(0o755)
        self.env = {**ENV, "PATH": f"{bindir}{os.pathsep}{ENV.get('PATH', '')}"}

    @property
    def calls(self) -> list[list[str]]:
        if not self.calls_file.exists():
            return []
        return [json.loads(line) for line in self.calls_file.read_text().splitlines()]


@pytest.fixture
def unknown_qos(tmp_path) -> str:
    """roce-healthy without its mlnx_qos outputs: PFC, trust and ECN cannot be decided (inconclusive)."""
    # recorded from the roce-healthy node model with mlnx_qos absent (a bundle's index and
    # checksums cover every member, so one cannot be cut out of a recorded bundle)
    from allreduce_doctor.capture import record
    from tests.scenarios import nodes
    from tests.scenarios.build import fake_host

    host = fake_host(nodes.Node("roce"))
    host.tools.discard("mlnx_qos")
    out = tmp_path / "no-qos.tar.gz"
    record(host, str(out), interval=1.0)
    return str(out)


@pytest.fixture
def fake_scontrol(tmp_path):
    def install(answers: dict[str, tuple[int, str, str]]) -> FakeScontrol:
        return FakeScontrol(tmp_path / "bin", answers)
    return install


def show_node(name: str, state: str, reason: str | None = None) -> str:
    """What `scontrol show node NAME` prints (Slurm 23.x layout), trimmed to the fields that matter."""
    lines = [f"NodeName={name} Arch=x86_64 CoresPerSocket=56",
             "   CPUAlloc=0 CPUEfctv=224 CPUTot=224 CPULoad=1.02",
             "   Gres=gpu:h100:8",
             f"   NodeAddr={name} NodeHostName={name} Version=23.11.4",
             f"   State={state} ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A",
             "   Partitions=gpu"]
    if reason is not None:
        lines.append(f"   Reason={reason} [root@2026-12-01T09:15:25]")
    return "\n".join(lines) + "\n\n"
