"""LiveHost: commands are argv lists with timeouts, hung commands are killed with their group,
unreadable files are reported, and secrets never leave the host object."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from allreduce_doctor.hosts.live import LiveHost


def test_hanging_command_costs_no_more_than_its_timeout():
    host = LiveHost()
    # The child forks a grandchild that also hangs: the whole process group must die.
    script = "import subprocess, time; subprocess.Popen(['sleep', '30']); time.sleep(30)"
    start = time.monotonic()
    res = host.run([sys.executable, "-c", script], timeout=0.5, key="hang/all")
    elapsed = time.monotonic() - start
    assert res.timed_out is True
    assert res.rc is None
    assert elapsed < 3.0, f"a 0.5 s timeout took {elapsed:.2f} s"


def test_hanging_command_group_is_killed():
    host = LiveHost()
    marker = f"allreduce-doctor-test-{os.getpid()}"
    host.run(["bash", "-c", f"sleep 60 & exec -a {marker} sleep 60"], timeout=0.3, key="hang/group")
    time.sleep(0.2)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.strip()
    assert left == ""


def test_missing_tool_is_reported_not_raised():
    res = LiveHost().run(["no-such-tool-allreduce-doctor"], timeout=1, key="x/all")
    assert res.error == "not found"
    assert res.rc is None


def test_nonzero_exit_is_captured():
    res = LiveHost().run(["sh", "-c", "echo oops >&2; exit 3"], timeout=5, key="x/all")
    assert res.rc == 3 and res.stderr.strip() == "oops" and not res.timed_out


def test_shell_strings_are_refused():
    with pytest.raises(ValueError):
        LiveHost().run("ls -l", timeout=1, key="x")  # type: ignore[arg-type]


def test_unreadable_file_is_missing_with_reason(tmp_path):
    secret = tmp_path / "root-only"
    secret.write_text("x")
    secret.chmod(0)
    if os.geteuid() == 0:
        res = LiveHost().read(str(tmp_path / "nope"))
        assert res.status == "missing" and res.reason == "no such file"
        return
    res = LiveHost().read(str(secret))
    assert res.status == "denied"
    assert res.reason == "permission denied (needs root)"


def test_process_environment_is_filtered_and_redacted():
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "NCCL_IB_HCA": "mlx5_0,mlx5_1",
        "NCCL_DEBUG": "INFO",
        "HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz012345",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "NCCL_TEST_URL": "https://user:hunter2@example.invalid/x",
    }
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(20)"], env=env)
    try:
        time.sleep(0.3)
        found = [p for p in LiveHost().processes() if p.pid == proc.pid]
        assert found, "a process carrying NCCL_* variables must be found"
        seen = found[0].env
        assert seen["NCCL_IB_HCA"] == "mlx5_0,mlx5_1"
        assert "HF_TOKEN" not in seen and "AWS_SECRET_ACCESS_KEY" not in seen and "PATH" not in seen
        assert "hunter2" not in seen["NCCL_TEST_URL"]
    finally:
        proc.kill()
        proc.wait()
