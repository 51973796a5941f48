"""A counter the glob lists but that cannot be read or parsed is unknown (None), never left out:
left out, the two samples' comparison could not tell it from a counter this driver lacks, and a
garbled `symbol_error` read as "no growth" on a node whose cable is failing."""

from allreduce_doctor.doctor import load_catalogue
from allreduce_doctor.probes.derive_counters import total
from allreduce_doctor.probes.execute import run_instance
from allreduce_doctor.probes.rates import compare
from allreduce_doctor.records import FileResult
from tests.snapshot.snapshot_helpers import FakeHost

DIR = "/sys/class/infiniband/mlx5_0/ports/1/counters"
PORT = {"device": "mlx5_0", "port": "1", "name": "mlx5_0/1"}


def _host(files: dict[str, FileResult]) -> FakeHost:
    return FakeHost(files={0: files}, globs={0: {f"{DIR}/*": list(files)}})


def _counters(files: dict[str, FileResult]):
    return run_instance(load_catalogue().probes["rdma_counters"], _host(files), PORT)


def test_a_garbled_or_unreadable_member_is_none_and_the_rest_are_read():
    out = _counters({
        f"{DIR}/symbol_error": FileResult(f"{DIR}/symbol_error", "ok", text="12\n"),
        f"{DIR}/link_downed": FileResult(f"{DIR}/link_downed", "ok", text="\x00\x7fgarbage\n"),
        f"{DIR}/port_rcv_errors": FileResult(f"{DIR}/port_rcv_errors", "error", reason="EIO: Input/output error"),
    })
    assert out.status == "ok"
    assert out.value == {"symbol_error": 12, "link_downed": None, "port_rcv_errors": None}


def test_nothing_readable_is_missing():
    out = _counters({f"{DIR}/symbol_error": FileResult(f"{DIR}/symbol_error", "error", reason="EIO")})
    assert (out.status, out.value) == ("missing", {})


def test_the_unknown_member_makes_its_total_unknown_not_zero():
    first = {"symbol_error": 12, "link_downed": None}
    second = {"symbol_error": 12, "link_downed": 3}
    record = compare("counters", first, second, 1.0)
    assert total(record, ["symbol_error", "link_downed"]) == (0, "link_downed is missing from one sample or unreadable")
