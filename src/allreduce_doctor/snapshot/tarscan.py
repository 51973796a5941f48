"""A small, strict reader of an uncompressed tar stream held in memory.

tarfile builds a TarInfo per member and reads through file objects: most of the ~50 ms that
opening a 1,300-member bundle took, the bulk of what `fleet --snapshots` spends per bundle. This parses the 512-byte headers
directly: USTAR (name + prefix), PAX extended headers ('x': path and size; a 'g' global header
that sets neither is ignored), GNU long names ('L'; 'K' long link names are skipped). Every
checksum is verified, and the archive must end with zero blocks; anything else is TarDamage.
Deciding what to accept (names, types, sizes) is the caller's job: it gets every member.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from zlib import adler32

BLOCK = 512
REGULAR = b"0"
DIRECTORY = b"5"
_REGULAR_TYPES = (b"0", b"\x00", b"7")  # '7' (contiguous) is a regular file to every reader
_NO_DATA = (DIRECTORY, b"1", b"2", b"3", b"4", b"6")  # whatever their size field says (as tarfile)
_MAX_EXTENDED = 1 << 20  # a PAX or long-name header is a few hundred bytes; more is damage
_ZERO_BLOCK = bytes(BLOCK)
_USTAR_MAGIC = b"ustar\x00"  # POSIX; GNU headers ("ustar  ") keep times where USTAR has the prefix
_EXTENDED_TYPES = (b"x", b"g", b"L", b"K")
# name (0-100), size (124-136), chksum (148-156), typeflag (156), magic (257-263) of a header, in one call
_HEAD = struct.Struct("100s24x12s12x8sc100x6s")


class TarDamage(Exception):
    """The tar stream is truncated or malformed; str() is the reason, in a few words."""


def scan(buf: bytes) -> Iterator[tuple[str, bytes, int, int]]:
    """Yield (name, type, size, data offset) per member, extended headers applied.

    type is REGULAR, DIRECTORY or the raw one-byte tar type. A regular member's data is
    buf[offset:offset + size]; the caller checks it is all there before taking it (its
    refusals of a too-big member come first), and the next step raises if it is not.
    """
    if not buf:
        raise TarDamage("empty file")
    end = len(buf)
    pos = 0
    pax: dict[str, str] = {}
    long_name: str | None = None
    while True:
        if pos >= end:
            raise TarDamage("unexpected end of data" if pos > end else "no end-of-archive marker")
        header = buf[pos : pos + BLOCK]
        if len(header) < BLOCK:
            raise TarDamage("truncated header")
        if header == _ZERO_BLOCK:
            if pax or long_name is not None:
                raise TarDamage("extended header without a member")
            follow = buf[pos + BLOCK : pos + 2 * BLOCK]
            if follow and follow != _ZERO_BLOCK[: len(follow)]:
                raise TarDamage("lone zero block inside the archive")
            return  # what follows the end-of-archive blocks is padding, never read
        raw_name, size_field, sum_field, kind, magic = _HEAD.unpack_from(header)  # kind: bytes, a dict key
        _check_sum(header, sum_field)
        size = _size(size_field)
        pos += BLOCK
        if kind in _EXTENDED_TYPES:
            data = _extended(buf, pos, size)
            pos += _padded(size)
            if kind == b"x":
                pax.update(_pax_records(data))
            elif kind == b"g":
                if set(_pax_records(data)) & {"path", "size"}:
                    raise TarDamage("global pax header sets path or size")
            elif kind == b"L":
                long_name = _text(data.split(b"\x00", 1)[0])
            continue
        if long_name is not None:
            name = long_name
        else:
            name = raw_name.split(b"\x00", 1)[0]
            if magic == _USTAR_MAGIC and header[345] != 0:  # a prefix (USTAR splits long names in two)
                name = header[345:500].split(b"\x00", 1)[0] + b"/" + name
            name = _text(name)
        if pax:
            name = pax.get("path", name)
            if "size" in pax:
                size = _pax_size(pax["size"])
            pax = {}
        long_name = None
        if kind in _REGULAR_TYPES:
            kind = DIRECTORY if kind == b"\x00" and name.endswith("/") else REGULAR
        yield name, kind, size, pos
        if kind not in _NO_DATA:  # unknown types are refused by the caller; were it to go on, skip
            pos += (size + BLOCK - 1) // BLOCK * BLOCK


def _padded(size: int) -> int:
    return (size + BLOCK - 1) // BLOCK * BLOCK


def _check_sum(header: bytes, field: bytes) -> None:
    """The header sum with its checksum field (`field`, bytes 148-156) read as spaces (8 * 32 = 256).

    adler32's low half is 1 + the byte sum mod 65521; under 256 bytes that sum cannot wrap,
    so three short slices give the exact sum at C speed (sum() over bytes is ten times slower).
    """
    want = _octal(field)
    got = (adler32(header[:148]) & 0xFFFF) + (adler32(header[156:356]) & 0xFFFF) + (adler32(header[356:]) & 0xFFFF)
    if want == got + 253:  # three adler32 starting ones taken off, the 256 of spaces put on
        return
    if want == 256 + sum(struct.unpack_from("148b8x356b", header)):  # old tars summed signed bytes
        return
    raise TarDamage("bad checksum")


def _octal(field: bytes) -> int:
    digits = field.split(b"\x00", 1)[0].strip(b" ")
    if not digits:
        return 0
    if not digits.isdigit():
        raise TarDamage("invalid header")
    try:
        return int(digits, 8)
    except ValueError:  # an 8 or a 9
        raise TarDamage("invalid header") from None


def _size(field: bytes) -> int:
    if field[0] in (0x80, 0xFF):  # GNU base-256, for sizes past 8 GiB (refused later, if sound)
        value = int.from_bytes(field[1:], "big", signed=field[0] == 0xFF)
        if value < 0:
            raise TarDamage("invalid header")
        return value
    return _octal(field)


def _extended(buf: bytes, pos: int, size: int) -> bytes:
    if size > _MAX_EXTENDED:
        raise TarDamage("extended header too large")
    data = buf[pos : pos + size]
    if len(data) != size:
        raise TarDamage("unexpected end of data")
    return data


def _pax_records(data: bytes) -> dict[str, str]:
    """'LEN KEY=VALUE\\n' records, LEN counting the whole record; zero padding may follow."""
    records: dict[str, str] = {}
    pos = 0
    while pos < len(data) and data[pos] != 0:
        space = data.find(b" ", pos, pos + 21)
        digits = data[pos:space]
        if space < 0 or not digits.isdigit():
            raise TarDamage("invalid pax header")
        stop = pos + int(digits)
        record = data[space + 1 : stop]
        if stop > len(data) or not record.endswith(b"\n") or b"=" not in record:
            raise TarDamage("invalid pax header")
        key, _, value = record[:-1].partition(b"=")
        records[_text(key)] = _text(value)
        pos = stop
    if data[pos:].strip(b"\x00"):
        raise TarDamage("invalid pax header")
    return records


def _pax_size(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise TarDamage("invalid pax header")
    return int(text)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")
