"""Bad input gets one clear line and exit code 2; no input crashes the reader."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allreduce_doctor.evidence import EMPTY, NOTHING, EvidenceError, load_evidence
from allreduce_doctor.evidence.reader import BlockReader
from tests.evidence.helpers import CASES, REAL, ROOT, cli, facts

JPEG = bytes([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10]) + b"JFIF\x00\x01\x01" + bytes(random.Random(1).randrange(256)
                                                                                  for _ in range(4000))


def _error(*args: str, stdin: bytes | None = None) -> str:
    proc = cli("diagnose", *args, stdin=stdin)
    assert proc.returncode == 2, proc.stdout
    assert proc.stdout == b""
    return proc.stderr.decode()


def test_missing_file(tmp_path):
    path = tmp_path / "nope.txt"
    assert _error("--evidence", str(path)) == f"allreduce-doctor: error: {path}: cannot read evidence file: no such file\n"


def test_directory(tmp_path):
    assert _error("--evidence", str(tmp_path)) == \
        f"allreduce-doctor: error: {tmp_path}: cannot read evidence file: it is a directory\n"


def test_jpeg(tmp_path):
    path = tmp_path / "screenshot.jpg"
    path.write_bytes(JPEG)
    assert _error("--evidence", str(path)) == f"allreduce-doctor: error: {path}: {NOTHING}\n"


def test_python_file():
    path = ROOT / "src" / "allreduce_doctor" / "observations.py"
    assert _error("--evidence", str(path)) == f"allreduce-doctor: error: {path}: {NOTHING}\n"


def test_empty_file(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    assert _error("--evidence", str(path)) == f"allreduce-doctor: error: {path}: {EMPTY}\n"


def test_empty_stdin():
    assert _error("--evidence", "-", stdin=b"") == f"allreduce-doctor: error: <stdin>: {EMPTY}\n"


def test_stdin_twice():
    assert _error("--evidence", "-", "--evidence", "-", stdin=b"x") == \
        "allreduce-doctor: error: --evidence -: stdin can be read only once\n"


def test_the_message_wording():
    assert NOTHING == ("this text shows no NCCL output line and describes no NCCL trouble; paste the "
                       "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET output of one failing rank, `ibstat`, `show_gids` "
                       "or the all_reduce_perf table")


def test_crlf_and_latin1(tmp_path):
    text = ("h\xe9te:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>\r\n"
            "h\xe9te:1:2 [0] NCCL INFO NCCL_IB_HCA set by environment to mlx5_0.\r\n")
    f = facts(tmp_path, text.encode("latin-1"))
    assert f["log.nccl"]["hcas"] == {"h\xe9te": ["mlx5_0:1"]}
    assert f["log.env"]["vars"] == {"NCCL_IB_HCA": "mlx5_0"}


@pytest.mark.slow  # a 10 MB input
def test_a_10_mb_single_line_is_cut(tmp_path):
    path = tmp_path / "big.txt"
    with path.open("wb") as out:
        out.write(b"NCCL INFO Using network IB\n")
        out.write(b"x" * (10 << 20) + b"\n")
        out.write(b"NCCL INFO NET/IB : Using [0]mlx5_0:1/IB\n")
    result = load_evidence([str(path)])
    report = result.report["files"][0]
    assert (report["lines"], report["cut_lines"], report["bytes"]) == (3, 1, path.stat().st_size)
    nccl = {o.fact: o.value for o in result.observations}["log.nccl"]
    assert (nccl["network"], nccl["lines"]) == ("IB", 2)


def test_binary_inside_a_log(tmp_path):
    text = b"NCCL INFO Using network IB\n\x00\x01\x02\xff\xfe garbage\nNCCL INFO Using network IB\n"
    result = load_evidence([str(_write(tmp_path, text))])
    assert result.report["files"][0]["binary_lines"] == 1


def test_reader_blocks_are_whole_lines():
    import io

    data = b"".join(f"line {i}\n".encode() for i in range(1000)) + b"tail"
    got = b"".join(bytes(buf[s:e]) for buf, s, e in BlockReader(io.BytesIO(data), "x", chunk=97, max_line=64))
    assert got == data + b"\n"


def _write(tmp_path, data: bytes):
    path = tmp_path / "paste.txt"
    path.write_bytes(data)
    return path


def _check(tmp_path, data: bytes) -> None:
    try:
        result = load_evidence([str(_write(tmp_path, data))])
    except EvidenceError as err:
        assert "\n" not in str(err)
        return
    json.dumps([o.to_dict() for o in result.observations])
    json.dumps(result.report)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(st.binary(max_size=3000))
def test_random_bytes(tmp_path, data):
    _check(tmp_path, data)


REAL_LOGS = [p.read_bytes() for p in sorted(CASES.glob("case-*.txt")) + sorted(REAL.glob("*.txt"))]


@st.composite
def mutated(draw):
    data = bytearray(draw(st.sampled_from(REAL_LOGS)))
    for _ in range(draw(st.integers(0, 12))):
        op = draw(st.sampled_from(["flip", "cut", "dup", "insert", "crlf", "truncate_line"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[pos] = draw(st.integers(0, 255))
        elif op == "cut":
            del data[pos:pos + draw(st.integers(1, 200))]
        elif op == "dup":
            data[pos:pos] = data[pos:pos + draw(st.integers(1, 300))]
        elif op == "insert":
            data[pos:pos] = draw(st.binary(max_size=40))
        elif op == "crlf":
            data = bytearray(bytes(data).replace(b"\n", b"\r\n"))
        elif op == "truncate_line":
            end = data.find(b"\n", pos)
            if end > pos:
                del data[pos:end]
    return bytes(data)


@SETTINGS
@given(mutated())
def test_mutated_real_logs(tmp_path, data):
    _check(tmp_path, data)


@pytest.mark.parametrize("encoding", ["utf-16", "latin-1"])
def test_other_encodings_do_not_crash(tmp_path, encoding):
    _check(tmp_path, (CASES / "case-029.txt").read_text().encode(encoding))
