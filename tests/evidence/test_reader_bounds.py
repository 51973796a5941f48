"""Evidence reads end: devices, FIFOs and kernel files are refused at open, and a stream (stdin)
stops at a size cap and a time cap, each with one line saying what to give instead."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from allreduce_doctor.evidence.reader import BlockReader, EvidenceError, open_evidence
from tests.evidence.helpers import cli

KERNEL = "cannot read evidence file: it is a kernel or device file; save the text to a file and give that"


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom", "/proc/self/status"])
def test_device_and_kernel_files_are_refused_in_one_line(path):
    res = cli("diagnose", "--evidence", path)
    assert res.returncode == 2
    assert res.stderr.decode().strip().splitlines() == [f"allreduce-doctor: error: {path}: {KERNEL}"]


def test_link_to_a_device_is_refused(tmp_path):
    link = tmp_path / "paste.txt"
    link.symlink_to("/dev/zero")
    with pytest.raises(EvidenceError) as err:
        open_evidence(str(link))
    assert str(err.value) == f"{link}: {KERNEL}"


def test_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "paste.fifo"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(EvidenceError) as err:
        open_evidence(str(fifo))
    assert time.monotonic() - start < 1
    assert str(err.value) == (f"{fifo}: cannot read evidence file: it is a FIFO, not a regular file; "
                              "save the text to a file, or pipe it to '-'")


def test_endless_stdin_stops_at_the_size_cap():
    yes = subprocess.Popen(["yes", "NCCL INFO endless"], stdout=subprocess.PIPE)
    try:
        with pytest.raises(EvidenceError) as err:
            for _ in BlockReader(yes.stdout, "<stdin>", chunk=1 << 16, max_bytes=1 << 20):
                pass
        assert str(err.value) == "<stdin>: cannot read evidence file: larger than 1 MiB; give the relevant part of it"
    finally:
        yes.kill()
        yes.wait()
        yes.stdout.close()


def test_silent_stdin_stops_at_the_time_cap():
    read_end, write_end = os.pipe()
    os.write(write_end, b"NCCL INFO partial line")
    start = time.monotonic()
    try:
        with os.fdopen(read_end, "rb") as stream, pytest.raises(EvidenceError) as err:
            for _ in BlockReader(stream, "<stdin>", max_seconds=0.3):
                pass
    finally:
        os.close(write_end)
    assert time.monotonic() - start < 2
    assert str(err.value) == "<stdin>: cannot read evidence file: still reading after 0.3 s; give a file instead"
