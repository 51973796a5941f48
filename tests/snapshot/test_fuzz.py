"""Whatever a bundle holds, reading it raises BundleError or answers (a glob it never recorded
answers GlobNotRecorded): never another exception."""

from __future__ import annotations

import gzip
import io
import json
import tarfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allreduce_doctor.errors import BundleError
from allreduce_doctor.hosts.base import GlobNotRecorded
from allreduce_doctor.hosts.snapshot import SnapshotHost
from tests.snapshot.snapshot_helpers import manifest, member, write_tar

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
# manifests close enough to valid that the field checks are reached
valid_fields = {
    "host": st.fixed_dictionaries({}, optional={"hostname": st.text(max_size=5), "euid": st.none() | st.integers()}),
    "samples": st.lists(st.fixed_dictionaries({"index": st.integers(0, 3), "time": st.floats()}), min_size=1,
                        max_size=3),
    "interval": st.floats(),
    "fabric": st.text(max_size=5),
    "extra": st.dictionaries(st.text(max_size=5), json_values, max_size=2),
    "created": st.text(max_size=5),
}
manifests = st.fixed_dictionaries(
    {"format": st.just("allreduce-doctor-bundle"), "format_version": st.sampled_from([1, 1, 1, 1, 0, 2, "1", None])},
    optional={key: valid | valid | json_values for key, valid in valid_fields.items()},
) | json_values
indexes = st.fixed_dictionaries(
    {}, optional={key: json_values for key in ("reads", "globs", "links", "which", "processes")}
) | st.fixed_dictionaries({"reads": st.dictionaries(st.just("0"), st.dictionaries(st.just("/p"), json_values))})


def exercise(path) -> None:
    """Open and ask everything; only BundleError may escape."""
    try:
        host = SnapshotHost(path)
        host.identity()
        for _ in range(3):
            host.read("/p")
            host.read("/proc/cmdline")
            try:
                host.glob("/sys/*")
            except GlobNotRecorded as err:  # an answer too: the glob is unknown (probes make it missing)
                assert str(err) == "/sys/*: not recorded in this bundle (index.json lists no such glob)"
            host.readlink("/p")
            host.which("ibstat")
            host.run(["ibstat"], 5, "ibstat/all")
            host.processes()
            host.sample_time()
            host.next_sample(1.0)
    except BundleError as err:
        assert "\n" not in str(err)


def tar_bytes(entries: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for name, data in entries.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


@SETTINGS
@given(data=st.binary(max_size=4096))
def test_random_bytes_as_an_archive(tmp_path, data):
    path = tmp_path / "bundle.tar.gz"
    path.write_bytes(data)
    exercise(path)


@SETTINGS
@given(data=st.binary(max_size=4096))
def test_random_bytes_inside_gzip(tmp_path, data):
    path = tmp_path / "bundle.tgz"
    path.write_bytes(gzip.compress(data))
    exercise(path)


@SETTINGS
@given(doc=manifests, index=json_values | indexes, record=json_values, text=json_values)
def test_random_json_in_a_sound_archive(tmp_path, doc, index, record, text):
    path = tmp_path / "bundle.tar.gz"
    entries = {
        "manifest.json": json.dumps(doc).encode(),
        "index.json": json.dumps(index).encode(),
        "commands/ibstat/all.json": json.dumps(record).encode(),
        "files/p": json.dumps(text).encode(),
    }
    path.write_bytes(tar_bytes(entries))
    exercise(path)


@SETTINGS
@given(flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=255)), min_size=1,
                      max_size=4), cut=st.integers(min_value=0))
def test_damaged_copies_of_a_good_archive(tmp_path, flips, cut):
    good = tar_bytes({"manifest.json": json.dumps(manifest()).encode(), "files/p": b"x" * 700,
                      "commands/ibstat/all.json": b'{"argv": ["ibstat"], "rc": 0}'})
    data = bytearray(good)
    for where, mask in flips:
        data[where % len(data)] ^= mask
    path = tmp_path / "bundle.tar.gz"
    path.write_bytes(bytes(data[: len(data) - cut % 64]))
    exercise(path)


@SETTINGS
@given(doc=manifests, index=json_values | indexes)
def test_random_json_in_a_directory(tmp_path_factory, doc, index):
    root = tmp_path_factory.mktemp("b")
    (root / "manifest.json").write_text(json.dumps(doc))
    (root / "index.json").write_text(json.dumps(index))
    exercise(root)


@pytest.mark.parametrize("text", [b"\xff\xfe not utf-8", b'{"format": "allreduce-doctor-bundle", "format_version": 1}'
                                  + b" " * 10, b"[" * 100_000, b"1" * 5000])
def test_odd_manifest_texts(tmp_path, text):
    path = tmp_path / "bundle.tar.gz"
    write_tar(path, [member("manifest.json", text)])
    exercise(path)
