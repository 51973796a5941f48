"""The real command in a real terminal: `allreduce-doctor --snapshot B` in a tmux pane (stdin and
stdout are terminals, so it opens the UI), keys sent with send-keys, the pane read back."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import pytest

from tests.tui.helpers import ROOT, bundle

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Pane:
    def __init__(self, tmp_path, command: str) -> None:
        # A private server socket in the test's folder: nothing else's tmux sessions are
        # touched, kill-server at the end stops only ours, and no socket file is left behind.
        self.base = ["tmux", "-S", str(tmp_path / "tmux.sock"), "-f", "/dev/null"]
        self.rc_file = tmp_path / "rc"
        # COLUMNS/LINES from the server's environment would override the pane's real size.
        shell = (f"cd {ROOT} && env -u COLUMNS -u LINES PYTHONPATH=src {sys.executable} -m allreduce_doctor {command}; "
                 f"echo $? > {self.rc_file}")
        started = subprocess.run([*self.base, "new-session", "-d", "-s", "doctor", "-x", "100", "-y", "30", shell],
                                 capture_output=True, text=True)
        if started.returncode != 0:
            pytest.skip(f"tmux cannot start a server here: {started.stderr.strip()}")

    def text(self) -> str:
        out = subprocess.run([*self.base, "capture-pane", "-p", "-t", "doctor"], capture_output=True, text=True)
        return out.stdout

    def wait_for(self, needle: str, timeout: float = 20.0) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            text = self.text()
            if needle in text:
                return text
            time.sleep(0.05)
        raise AssertionError(f"{needle!r} never appeared; the pane shows:\n{self.text()}")

    def keys(self, *keys: str) -> None:
        # One at a time, apart: ESC followed at once by a letter reads as alt+letter.
        for key in keys:
            subprocess.run([*self.base, "send-keys", "-t", "doctor", key], check=True)
            time.sleep(0.3)

    def exit_code(self, timeout: float = 10.0) -> int:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.rc_file.exists() and self.rc_file.read_text().strip():
                return int(self.rc_file.read_text())
            time.sleep(0.05)
        raise AssertionError(f"the command did not exit; the pane shows:\n{self.text()}")

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True)


def test_real_command_in_tmux(tmp_path):
    pane = Pane(tmp_path, f"--snapshot {bundle('roce-pfc-off')}")
    try:
        text = pane.wait_for("Decision tree")
        assert "FAULT FOUND: pfc_not_enabled (critical, owner network)  gpu-node-017 (roce)" in text
        assert "[FAIL] PFC is enabled on some priority" in text
        pane.keys("r")
        assert 'roce.priority [ok]  probe roce_priority' in pane.wait_for('"dscp": 26,')
        pane.keys("Escape", "w")
        text = pane.wait_for("No loss or pause-cascade signature")
        assert "1 interval recorded" in text and "mlx5_7/1" in text
        pane.keys("Escape", "?")
        pane.wait_for("Diagnosis screen")
        pane.keys("Escape", "q")
        assert pane.exit_code() == 1  # a fault was found
    finally:
        pane.close()
