"""LiveHost.run bounds a command: output read as it arrives and capped (the group killed at the
cap, so an endless printer cannot take the node's memory), and nothing it started outlives it,
not a grandchild that detached its output, not one that left the process group with setsid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

from allreduce_doctor.hosts.live import MAX_OUTPUT_BYTES, LiveHost

CAP_ERROR = "output over 8 MiB (stopped reading, killed)"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state != b"Z"


def _wait_gone(pid: int, seconds: float = 2.0) -> bool:
    end = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < end:
        time.sleep(0.02)
    return not _alive(pid)


def test_endless_printer_stops_at_the_cap_with_bounded_memory(tmp_path):
    """A fake lspci running `yes`, probed in a child process: the observation is an error naming
    the cap, it comes back in well under the probe's 20 s timeout, and peak RSS stays small."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "lspci").write_text("#!/bin/sh\nexec yes 'endless output from a broken tool'\n")
    (fake / "lspci").chmod(0o755)
    script = textwrap.dedent("""
        import json, resource, sys, time
        from allreduce_doctor.hosts.live import LiveHost
        from allreduce_doctor.probes.enumerate import Enumerator
        from allreduce_doctor.probes.execute import run_probe
        from allreduce_doctor.doctor import load_catalogue as load_probe_catalogue
        catalogue = load_probe_catalogue()
        host = LiveHost()
        start = time.monotonic()
        obs, _ = run_probe(catalogue.probes["lspci"], host, Enumerator(host, catalogue.enumerators))
        # VmHWM is this process image's own peak; ru_maxrss keeps the peak of the process that
        # forked it (Linux carries it across exec), so under a big pytest worker it reads high.
        try:
            peak = int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])
        except (OSError, StopIteration):
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"status": obs.status, "reason": obs.reason, "seconds": time.monotonic() - start,
                          "peak_kib": peak}))
    """)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["status"] == "error"
    assert got["reason"] == f"lspci: {CAP_ERROR}"
    assert got["seconds"] < 10
    assert got["peak_kib"] < 160 * 1024, f"peak RSS {got['peak_kib'] // 1024} MiB"


def test_output_at_the_cap_keeps_exactly_the_cap():
    res = LiveHost().run(["yes"], timeout=20, key="yes/all")
    assert res.error == CAP_ERROR
    assert res.rc is None and not res.timed_out
    assert len(res.stdout) == MAX_OUTPUT_BYTES
    assert res.stdout.startswith("y\ny\n")


def test_output_under_the_cap_is_whole():
    res = LiveHost().run([sys.executable, "-c", "import sys; sys.stdout.write('x' * 3_000_000); sys.stderr.write('e')"],
                         timeout=20, key="big/all")
    assert res.ok and res.error == ""
    assert len(res.stdout) == 3_000_000 and res.stderr == "e"


def test_grandchild_that_detached_its_output_is_killed_after_a_normal_exit():
    res = LiveHost().run(["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"], timeout=10, key="detach/all")
    assert res.rc == 0 and res.duration < 2
    assert _wait_gone(int(res.stdout))


def test_setsid_grandchild_is_killed():
    script = textwrap.dedent("""
        import os, sys, time
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.setsid()
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.write(w, b"x")
            time.sleep(60)
            os._exit(0)
        os.read(r, 1)
        print(pid)
    """)
    res = LiveHost().run([sys.executable, "-c", script], timeout=10, key="setsid/all")
    assert res.rc == 0, res.stderr
    assert _wait_gone(int(res.stdout))


def test_grandchild_holding_the_pipe_does_not_hold_the_command():
    """The parent exits, a grandchild keeps stdout open and sleeps: the result comes back at once."""
    res = LiveHost().run(["sh", "-c", "echo done; sleep 60 &"], timeout=10, key="hold/all")
    assert res.rc == 0 and res.stdout == "done\n"
    assert res.duration < 2
