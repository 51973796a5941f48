"""Bundle format version 1: the member names, and how keys and paths become them.

    manifest.json                      format, versions, host, time, fabric, samples, extra,
                                       index_crc32 (CRC-32 of index.json)
    index.json                         failed reads, globs, links, which, processes, members
                                       (every other member's name -> CRC-32)
    files/<abs path>                   successful reads of sample 0 (exact text)
    samples/<n>/files/<abs path>       successful reads of sample n >= 1
    commands/<key>.json                CommandResult.to_dict() of sample 0
    samples/<n>/commands/<key>.json    sample n >= 1

Every bundle read lists its members and their checksums: one written before index_crc32 and
members existed is refused (bundle.OlderBundle), since a member lost from it would replay as a
file the node did not have. A read index.json records neither as a member nor as a failure
replays as not captured (unknown), a glob it does not record is unknown (never "nothing
matches"), and a path one of its globs listed but no member holds is refused.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re

from allreduce_doctor.snapshot.schema import FORMAT_NAME, FORMAT_VERSION  # noqa: F401 - re-exported

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
MANIFEST = "manifest.json"
INDEX = "index.json"
NOT_CAPTURED = "not captured in the bundle"
DAMAGED = "the bundle is damaged, collect it again"
WHAT_TO_GIVE = "give the path of a bundle directory or .tar.gz"

_UNSAFE_KEY_CHARS = re.compile(r"[^A-Za-z0-9_.:@+-]")
_MAX_KEY_SEGMENT = 120  # longer key segments are cut and given a hash suffix
_MAX_NAME_BYTES = 255  # a file name on every filesystem we care about


def is_archive_name(path: str | os.PathLike) -> bool:
    return str(path).endswith(ARCHIVE_SUFFIXES)


def sample_prefix(sample: int) -> str:
    return "" if sample == 0 else f"samples/{sample}/"


@functools.lru_cache(maxsize=8192)  # the same few thousand paths on every node of a fleet
def file_member(path: str, sample: int) -> str | None:
    """The member holding `path`'s text, or None when the path cannot be a member name
    (relative, '.', '..', empty segments, NUL, a segment too long): such reads live in index.json."""
    if not path.startswith("/") or "\x00" in path:
        return None
    parts = path[1:].split("/")
    if "" in parts or "." in parts or ".." in parts:
        return None
    # A character is at most 4 bytes in UTF-8: only a segment over a quarter of the limit needs encoding.
    if max(map(len, parts)) > _MAX_NAME_BYTES // 4 and any(
            len(part.encode("utf-8", "surrogatepass")) > _MAX_NAME_BYTES for part in parts):
        return None
    return f"{sample_prefix(sample)}files{path}"


def command_key(key: str, argv: list[str]) -> str:
    """A safe relative path for a command key: segments of [A-Za-z0-9_.:@+-], anything else '_'.
    An empty key is derived from argv, as one segment."""
    raw = key or _UNSAFE_KEY_CHARS.sub("_", "_".join(str(a) for a in argv))
    segments = []
    for part in raw.split("/"):
        if not part:
            continue
        safe = _UNSAFE_KEY_CHARS.sub("_", part)
        if safe in (".", ".."):
            safe = "_"
        if len(safe) > _MAX_KEY_SEGMENT:
            digest = hashlib.sha256(safe.encode()).hexdigest()[:12]
            safe = f"{safe[:100]}-{digest}"
        segments.append(safe)
    if not segments:
        return "_"
    # a directory segment never ends in .json, so it cannot clash with another key's file
    return "/".join([s + "_" if s.endswith(".json") else s for s in segments[:-1]] + segments[-1:])


def command_member(key: str, argv: list[str], sample: int) -> str:
    return f"{sample_prefix(sample)}commands/{command_key(key, argv)}.json"


def shown(name: str) -> str:
    """A member name fit for a one-line message: quoted, control characters escaped, bounded."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)
    if len(text) > 200:
        text = text[:200] + "..."
    return f"'{text}'"
