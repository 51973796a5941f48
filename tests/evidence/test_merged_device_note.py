"""The merged device count at INFO (net_ib.cc ncclIbAccept v2.24.3-1+, net_ib/connect.cc v2.29+) is a
note that names no cause, read the same by the fast path."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence.nccl import NcclLog
from tests.evidence.helpers import diagnose_json
from tests.evidence.test_fast_path_property import _read

PREFIXES = ("node-a:4242:4301 [0] ", "")  # NCCL's own prefix, and the message quoted without it


def _errors(d: dict) -> dict:
    return next(e["observed"] for e in d["evidence"] if e["fact"] == "log.nccl.errors") or {}


# -- 4. ib_vdevice_mismatch at INFO (net_ib.cc ncclIbAccept v2.24.3-1+, net_ib/connect.cc v2.29+) ---------
VDEV_INFO = "NCCL INFO NET/IB : Local mergedDev mlx5_0+mlx5_1 has a different number of devices=2 as remote mlx5_0 1"


@pytest.mark.parametrize("prefix", PREFIXES)
def test_the_merged_device_count_is_read_at_info_as_a_note(prefix):
    log = NcclLog()
    assert log.feed(prefix + VDEV_INFO, "paste.txt:1")
    assert list(log.errors) == ["ib_vdevice_mismatch"] and log.errors["ib_vdevice_mismatch"]["blocking"] is False


def test_the_merged_device_note_at_info_names_no_cause(tmp_path):
    # NCCL goes on after it (no return in ncclIbAccept): a note, with no candidate of its own.
    rc, d, _ = diagnose_json(tmp_path, "node-a:1:2 [0] NCCL INFO NCCL version 2.27.7+cuda12.9\n"
                                       f"node-a:1:2 [0] {VDEV_INFO}\n")
    assert rc == 3 and d["findings"] == [] and _errors(d)["ib_vdevice_mismatch"]["count"] == 1


def test_the_fast_path_reads_the_new_info_lines_as_the_line_path(tmp_path):
    lines = [f"node-{n}:1:2 [0] {VDEV_INFO}" for n in range(3)] + [
        "node-1:1:2 [0] NCCL INFO socketPollConnect: connect to 10.0.0.2<45763> returned No route to host, retrying "
        "(1/34) after sleep for 100 msec"] * 2
    path = tmp_path / "mix.log"
    path.write_text("\n".join(lines) + "\n")
    fast, line = _read(path, bulk=True), _read(path, bulk=False)
    assert line["errors"]["ib_vdevice_mismatch"]["count"] == 3 and line["errors"]["connect_retry"]["count"] == 2
    assert fast == line
