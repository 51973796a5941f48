"""A bundle's gzip stream inflated whole, to its end (gzip checks CRC and length there), bounded."""

from __future__ import annotations

import gzip
import zlib

_QUICK_COMPRESSED, _QUICK_INFLATED = 2 << 20, 8 << 20  # what _inflate_small takes on
_CHUNK = 1 << 20


class InflatedTooLarge(Exception):
    """The stream inflates past the limit: the caller refuses the bundle in its own words."""


def inflate(raw, limit: int) -> bytes | bytearray:
    """The whole decompressed stream of the open file `raw`, at most `limit` bytes.

    One buffer grown in place (a list of chunks joined at the end held the stream twice:
    1 GB for a 510 KB gzip of 500 MiB of zeros). GzipFile rather than zlib: its messages for
    a cut stream, a foreign file or junk after the stream are the ones users (and tests) see.
    """
    quick = _inflate_small(raw, limit)
    if quick is not None:
        return quick
    raw.seek(0)
    buf = bytearray()
    with gzip.GzipFile(fileobj=raw, mode="rb") as gz:
        while chunk := gz.read1(_CHUNK):
            if len(buf) + len(chunk) > limit:
                raise InflatedTooLarge
            buf += chunk
    return buf


def _inflate_small(raw, limit: int) -> bytes | None:
    """A node's usual bundle (tens of KiB inflating to a few MiB) in one zlib call, a third
    cheaper than GzipFile's chunks; None for anything else (bigger, several gzip members, junk
    after the stream, damage), which GzipFile then reads, with its messages. Bounded on both
    sides, so its peak (zlib joins its output blocks: twice the output) stays small."""
    data = raw.read(_QUICK_COMPRESSED + 1)
    if len(data) > _QUICK_COMPRESSED:
        return None
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # a gzip stream: header, CRC-32 and size checked
    try:
        out = inflater.decompress(data, _QUICK_INFLATED)
    except zlib.error:
        return None
    if not inflater.eof or inflater.unused_data or len(out) > limit:
        return None
    return out
