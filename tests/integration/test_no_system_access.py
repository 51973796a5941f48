"""Only LiveHost touches /sys, /proc, /dev, /etc or starts a process.

Behavioural: a full diagnosis of a bundle runs with open(), os.* listing calls and subprocess
guarded; any access to a system path or any process start fails the test. Static: no module
but hosts/live.py imports subprocess or psutil.
"""

from __future__ import annotations

import ast
import builtins
import io
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_scenarios import FIXTURES

SYSTEM = ("/sys", "/proc", "/dev", "/etc")
SRC = Path(__file__).resolve().parents[2] / "src" / "allreduce_doctor"


def _system(path) -> bool:
    try:
        text = os.fspath(path)
    except TypeError:
        return False
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    text = os.path.abspath(text)
    return any(text == p or text.startswith(p + "/") for p in SYSTEM)


@pytest.fixture
def guarded(monkeypatch):
    touched: list[str] = []
    real_open, real_io_open = builtins.open, io.open

    def guard(real):
        def wrapper(path, *args, **kwargs):
            if _system(path):
                touched.append(str(path))
            return real(path, *args, **kwargs)
        return wrapper

    monkeypatch.setattr(builtins, "open", guard(real_open))
    monkeypatch.setattr(io, "open", guard(real_io_open))
    for name in ("listdir", "scandir", "stat", "lstat", "readlink"):
        monkeypatch.setattr(os, name, guard(getattr(os, name)))

    def no_process(*args, **kwargs):
        raise AssertionError(f"process started: {args[:1]}")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    return touched


@pytest.mark.parametrize("name", ["roce-healthy", "ib-port-down"])
def test_diagnosing_a_bundle_touches_no_system_path(guarded, name):
    from allreduce_doctor.doctor import Doctor
    from allreduce_doctor.hosts.snapshot import SnapshotHost
    from allreduce_doctor.session import Options, Session

    diagnosis = Session(Doctor.load(), SnapshotHost(FIXTURES / name / "bundle.tar.gz"), Options(interval=0)).diagnose()
    assert diagnosis.verdict in ("fault", "healthy", "inconclusive")
    assert guarded == []


def test_only_the_live_host_imports_process_modules():
    offenders = []
    for path in SRC.rglob("*.py"):
        if path.relative_to(SRC).as_posix() == "hosts/live.py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if any(n.split(".")[0] in ("subprocess", "psutil", "glob") for n in names):
                offenders.append(f"{path.relative_to(SRC)}: {names}")
    assert offenders == []
