"""The strict tar reader behind .tar.gz bundles: the same members as tarfile, and damage refused exactly."""

from __future__ import annotations

import gzip
import io
import json
import tarfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allreduce_doctor.errors import BundleError
from allreduce_doctor.snapshot import bundle as bundle_mod
from allreduce_doctor.snapshot import inflate as inflate_mod
from allreduce_doctor.snapshot import tarscan
from allreduce_doctor.snapshot.writer import pack_archive
from tests.snapshot.snapshot_helpers import RECORDED_INDEX, manifest, seal_dir, seal_entries

MANIFEST = json.dumps(manifest()).encode()
INDEX = json.dumps(RECORDED_INDEX).encode()
AGAIN = "collect the snapshot again"


def tar_of(entries, fmt=tarfile.USTAR_FORMAT, pax_headers=None) -> bytes:
    """An uncompressed tar of (name, data, type) entries after manifest.json and index.json
    (one header and one data block each), sealed: the index lists the entries."""
    raw = io.BytesIO()
    listed = seal_entries([("manifest.json", MANIFEST, tarfile.REGTYPE, ""), ("index.json", INDEX, tarfile.REGTYPE, ""),
                           *((name, data, kind, "") for name, data, kind in entries)])
    with tarfile.open(fileobj=raw, mode="w", format=fmt, pax_headers=pax_headers or {}) as tar:
        for name, data, kind, _ in listed:
            info = tarfile.TarInfo(name)
            info.type = kind
            regular = kind in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE)
            info.size = len(data) if regular else 0
            tar.addfile(info, io.BytesIO(data) if regular else None)
    return raw.getvalue()


def opened(tmp_path, tar_bytes: bytes, compressed: bytes | None = None):
    path = tmp_path / "bundle.tar.gz"
    path.write_bytes(gzip.compress(tar_bytes) if compressed is None else compressed)
    return bundle_mod.open_bundle(path), path


def refusal(tmp_path, tar_bytes: bytes, compressed: bytes | None = None) -> str:
    with pytest.raises(BundleError) as caught:
        opened(tmp_path, tar_bytes, compressed)
    assert "\n" not in str(caught.value)
    return str(caught.value).split(": ", 1)[1]


def header_at(data: bytes, index: int) -> int:
    """Offset of the index-th header in a tar where every member fits in one data block."""
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert all(info.size <= 512 for info in tar.getmembers())
    return index * 1024


def with_checksum(block: bytearray) -> bytearray:
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\x00 " % sum(block)
    return block


# --- the same members as tarfile ----------------------------------------------------------
names = st.lists(st.text(st.sampled_from("abcé_-.0"), min_size=1, max_size=40), min_size=1, max_size=6).map("/".join)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=st.dictionaries(names, st.binary(max_size=1500), max_size=6),
       fmt=st.sampled_from([tarfile.GNU_FORMAT, tarfile.PAX_FORMAT]))
def test_members_match_tarfile(tmp_path, files, fmt):
    files = {n: d for n, d in files.items() if not n.startswith(".") and "/." not in n and n not in ("manifest.json", "index.json")}
    data = tar_of([(n, d, tarfile.REGTYPE) for n, d in files.items()], fmt)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        expected = {i.name: tar.extractfile(i).read() for i in tar if i.isreg()}
    got = {}
    for name, kind, size, offset in tarscan.scan(data):
        assert kind == tarscan.REGULAR
        got[name] = data[offset : offset + size]
    assert got == expected


def test_what_pack_archive_writes_reads_back_in_both_formats(tmp_path):
    for long in (False, True):
        staging = tmp_path / f"stage{long}"
        deep = staging / "files/sys/class/infiniband/mlx5_0/ports/1" / ("counters_ext" * (12 if long else 1))
        deep.mkdir(parents=True)
        (staging / "manifest.json").write_bytes(MANIFEST)
        (staging / "index.json").write_bytes(INDEX)
        (deep / "port_rcv_data").write_text("123\n")
        seal_dir(staging)
        out = tmp_path / f"out{long}.tar.gz"
        pack_archive(staging, out)
        with tarfile.open(out) as tar:
            paths = [info.pax_headers.get("path") for info in tar.getmembers()]
        assert any(paths) == long  # PAX only when a name is too long for USTAR
        member = str((deep / "port_rcv_data").relative_to(staging))
        assert bundle_mod.open_bundle(out).member(member) == b"123\n"


def test_directories_are_skipped_and_long_gnu_and_pax_names_apply(tmp_path):
    long = "files/" + "d" * 150 + "/x"
    for fmt in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        entries = [("files", b"", tarfile.DIRTYPE), (long, b"deep", tarfile.REGTYPE)]
        bundle, _ = opened(tmp_path, tar_of(entries, fmt))
        assert bundle.member(long) == b"deep" and bundle.member("files") is None


def test_old_style_regular_and_contiguous_files_are_regular(tmp_path):
    bundle, _ = opened(tmp_path, tar_of([("files/a", b"A", tarfile.AREGTYPE), ("files/b", b"B", tarfile.CONTTYPE),
                                         ("files/dir/", b"", tarfile.AREGTYPE)]))
    assert (bundle.member("files/a"), bundle.member("files/b"), bundle.member("files/dir")) == (b"A", b"B", None)


def test_a_pax_global_header_without_path_or_size_is_ignored(tmp_path):
    data = tar_of([("files/a", b"A", tarfile.REGTYPE)], tarfile.PAX_FORMAT, pax_headers={"comment": "git 1234"})
    assert opened(tmp_path, data)[0].member("files/a") == b"A"


def test_a_pax_global_header_that_sets_a_path_is_refused(tmp_path):
    data = tar_of([], tarfile.PAX_FORMAT, pax_headers={"path": "elsewhere"})
    assert refusal(tmp_path, data) == f"truncated or corrupt archive (global pax header sets path or size); {AGAIN}"


def test_a_pax_path_that_escapes_is_refused_by_that_path(tmp_path):
    data = tar_of([("x" * 120 + "/../../../etc/passwd", b"root", tarfile.REGTYPE)], tarfile.PAX_FORMAT)
    escaping = "x" * 120 + "/../../../etc/passwd"
    assert refusal(tmp_path, data) == f"member '{escaping}' escapes the bundle; refusing to read it"


def test_signed_checksums_of_old_tars_are_accepted(tmp_path):
    data = bytearray(tar_of([("files/é", b"e", tarfile.REGTYPE)]))
    start = header_at(data, 2)
    block = data[start : start + 512]
    block[148:156] = b"%06o\x00 " % (256 + sum(b - 256 if b > 127 else b for b in block[:148] + block[156:]))
    data[start : start + 512] = block
    assert opened(tmp_path, bytes(data))[0].member("files/é") == b"e"


@pytest.mark.parametrize(("kind", "words"), [(b"S", "special member (tar type b'S')"),
                                             (b"V", "special member (tar type b'V')")])
def test_other_types_are_refused(tmp_path, kind, words):
    data = tar_of([("files/odd", b"", kind)])
    assert refusal(tmp_path, data) == f"member 'files/odd' is a {words}, not a regular file; refusing to read it"


def test_a_huge_base256_size_is_refused_as_too_big(tmp_path):
    data = bytearray(tar_of([("files/big", b"", tarfile.REGTYPE)]))
    start = header_at(data, 2)
    block = data[start : start + 512]
    block[124:136] = b"\x80" + (1 << 40).to_bytes(11, "big")
    data[start : start + 512] = with_checksum(block)
    assert refusal(tmp_path, bytes(data)) == (
        f"member 'files/big' is {1 << 40} bytes, over the 16 MiB limit for one member; refusing to read it"
    )


# --- damage, one reason each --------------------------------------------------------------
def damaged(reason: str) -> str:
    return f"truncated or corrupt archive ({reason}); {AGAIN}"


def test_a_bad_checksum_after_the_first_member_is_refused(tmp_path):
    data = bytearray(tar_of([("files/a", b"A", tarfile.REGTYPE)]))
    data[header_at(data, 1) + 5] ^= 1
    assert refusal(tmp_path, bytes(data)) == damaged("bad checksum")


def test_a_bad_number_field_is_refused(tmp_path):
    data = bytearray(tar_of([("files/a", b"A", tarfile.REGTYPE)]))
    start = header_at(data, 2)
    block = data[start : start + 512]
    block[124:136] = b"0000000009A\x00"
    data[start : start + 512] = with_checksum(block)
    assert refusal(tmp_path, bytes(data)) == damaged("invalid header")


@pytest.mark.parametrize(
    ("keep", "reason"),
    [(2048 + 512 + 1, "unexpected end of data"), (2048 + 300, "truncated header"),
     (3584, "no end-of-archive marker"), (0, "empty file")],
)
def test_a_cut_tar_inside_a_whole_gzip_is_refused(tmp_path, keep, reason):
    data = tar_of([("files/a", b"A" * 600, tarfile.REGTYPE)])
    assert refusal(tmp_path, data[:keep]) == damaged(reason)


def test_one_zero_block_then_the_end_is_accepted_but_a_lone_one_inside_is_not(tmp_path):
    data = tar_of([("files/a", b"A", tarfile.REGTYPE)])
    assert opened(tmp_path, data[:3072 + 512])[0].member("files/a") == b"A"
    body = tar_of([])[:2048]
    assert refusal(tmp_path, body + bytes(512) + data[2048:]) == damaged("lone zero block inside the archive")


def test_an_empty_archive_has_no_manifest(tmp_path):
    assert refusal(tmp_path, bytes(10240)) == "no manifest.json; this is not an allreduce-doctor bundle"


@pytest.mark.parametrize("records", [b"12 path=x\n", b"0 path=x\n", b"x path=a\n", b"11 size=-4\n", b"8 pathx\n"])
def test_bad_pax_records_are_refused(tmp_path, records):
    info = tarfile.TarInfo("PaxHeader")
    info.type = tarfile.XHDTYPE
    info.size = len(records)
    pax = info.tobuf(tarfile.USTAR_FORMAT) + records + bytes(-len(records) % 512)
    data = tar_of([("files/a", b"A", tarfile.REGTYPE)])
    assert refusal(tmp_path, data[:1024] + pax + data[1024:]) == damaged("invalid pax header")


def test_an_extended_header_with_no_member_is_refused(tmp_path):
    data = tar_of([("files/" + "a" * 120, b"A", tarfile.REGTYPE)], tarfile.GNU_FORMAT)
    assert refusal(tmp_path, data[:2048 + 1024] + bytes(1024)) == damaged("extended header without a member")


def test_junk_after_the_gzip_stream_is_refused_but_zero_padding_is_not(tmp_path):
    data = tar_of([("files/a", b"A", tarfile.REGTYPE)])
    assert opened(tmp_path, data, gzip.compress(data) + bytes(100))[0].member("files/a") == b"A"
    assert refusal(tmp_path, data, gzip.compress(data) + b"junk") == damaged("Not a gzipped file (b'ju')")


def test_what_the_one_call_inflate_declines_is_read_by_gzipfile(tmp_path, monkeypatch):
    """inflate._inflate_small takes a small single-member stream; two members, or more than it may
    inflate, fall back to GzipFile: the same members either way."""
    data = tar_of([("files/a", b"A" * 3000, tarfile.REGTYPE)])
    half = len(data) // 2
    two_members = gzip.compress(data[:half]) + gzip.compress(data[half:])
    assert inflate_mod._inflate_small(io.BytesIO(two_members), 1 << 30) is None
    assert opened(tmp_path, data, two_members)[0].member("files/a") == b"A" * 3000
    assert inflate_mod._inflate_small(io.BytesIO(gzip.compress(data)), 1 << 30) == data
    monkeypatch.setattr(inflate_mod, "_QUICK_INFLATED", 1024)  # the stream is bigger than the quick path takes
    assert inflate_mod._inflate_small(io.BytesIO(gzip.compress(data)), 1 << 30) is None
    assert opened(tmp_path, data)[0].member("files/a") == b"A" * 3000


def test_a_gzip_bomb_stops_at_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(bundle_mod, "MAX_TOTAL_BYTES", 1 << 20)
    monkeypatch.setattr(bundle_mod, "_SLACK", 0)
    data = tar_of([("files/a", b"A", tarfile.REGTYPE)])
    assert refusal(tmp_path, data + bytes(4 << 20)) == (
        "members total over the 1 MiB limit for a bundle; refusing to read it"
    )
