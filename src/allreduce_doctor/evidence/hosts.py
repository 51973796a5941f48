"""A paste of several hosts, read per host: each host's part of the paste gives that host's facts.

A paste is several hosts when it names two or more: a prompt `root@gpu01:~#`, `[u@gpu01 ~]$`,
`u@gpu01:~/dir$` before any command (its output, its `export NCCL_X=...`), or `ssh gpu01 CMD`. Then every host the paste names is a part,
those its NCCL lines name too (a host with only log lines gets what its log lines alone say), and
the paste is read a second time, each line given to the scanner of its part:
  - an NCCL line with its `host:pid:tid` prefix belongs to that host (the ranks that printed it);
  - any other line (an NCCL line without a host among them) belongs to the host the paste last
    named before it, as for one host;
  - lines before the paste names any host are the UNATTRIBUTED part: diagnosed on their own and
    never healthy (fleet/pasted.py), as no node is known to be the one they show.
A part reads its lines as the paste of that host's lines alone would be read (line by line, and a
large block of NCCL lines in bulk), so its facts are that host's alone. A paste naming one host,
or none, is one node's facts as before (nothing here runs). Hosts compare by node_facts.host_key.
"""

from __future__ import annotations

import re
from typing import cast

from allreduce_doctor.evidence import bulk
from allreduce_doctor.evidence.node_facts import host_key, hosts_of
from allreduce_doctor.evidence.reader import STDIN, BlockReader, EvidenceError, decode, display_name, open_evidence
from allreduce_doctor.evidence.segmenter import BULK_MIN, STDIN_COPY_MAX, Scanner
from allreduce_doctor.parsers.nccl_log import MARK_RE, split

UNATTRIBUTED = "(unattributed)"
MAX_HOSTS = 64  # hosts diagnosed one by one; the lines of any further host are left out (and named)
MAX_PREFIXES = 100_000  # distinct NCCL line prefixes (host:pid:tid [dev] file:line) whose host is kept
_MARK_RE = re.compile(MARK_RE.pattern.encode())  # the NCCL mark, on the raw bytes of a line


def parts_of(scanner: Scanner) -> list[str]:
    """The hosts of a paste whose tool outputs name two or more, in the order the paste names
    them (then the hosts only NCCL lines name, sorted); [] for a paste of one host or none."""
    tool_hosts = hosts_of(scanner.blocks)
    named = list(dict.fromkeys([*tool_hosts, *(host_key(h) for _f, _l, h in scanner.named)]))
    if len(named) < 2:  # the prompts (or ssh) name one host, or none
        return []
    logged = sorted({host_key(h) for h in scanner.nccl.hosts if h and h != "?"} - set(named))
    return named + logged


class HostParts:
    """The second reading: every line to the scanner of the part it belongs to."""

    def __init__(self, hosts: list[str]) -> None:
        self.parts: dict[str, Scanner] = {h: Scanner(host=h) for h in hosts[:MAX_HOSTS]}
        self.parts[UNATTRIBUTED] = Scanner()
        self.left_out: list[str] = list(hosts[MAX_HOSTS:])
        self._heads: dict[bytes, str | None] = {}  # an NCCL line's text before its mark -> its host

    def read(self, path: str, first: Scanner) -> None:
        name = display_name(path)
        switches = sorted((line, host_key(h)) for f, line, h in first.named if f == name)
        stream = self._reopen(path, first)
        for part in self.parts.values():
            part.open_file(name)
        lineno, current, i = 0, None, 0
        try:
            reader = BlockReader(stream, name)
            for buf, start, end in reader:
                lines, base = bytes(buf[start:end]).split(b"\n")[:-1], lineno
                owners = []
                for raw in lines:
                    lineno += 1
                    while i < len(switches) and switches[i][0] <= lineno:
                        current, i = switches[i][1], i + 1
                    owners.append(self._part(raw, current))
                nccl = [b"NCCL " in raw for raw in lines]
                # the first reading's rule (segmenter.Scanner._block): a large block of mostly NCCL lines in bulk,
                # unless prose names NCCL in it (bulk.py): then line by line, in order
                if len(lines) >= BULK_MIN and (len(lines) - sum(nccl)) * 10 <= len(lines) \
                        and b"\x00" not in buf[start:end] and bulk.PROSE not in bulk.rare(buf, start, end):
                    self._in_bulk(lines, owners, nccl, base)
                    continue
                for n, (raw, owner) in enumerate(zip(lines, owners), base + 1):
                    if owner is not None:
                        owner.take(raw, n)
        finally:
            if path != STDIN:
                stream.close()
        for part in self.parts.values():
            part.close_file(lineno, reader.bytes)

    def _host_of(self, raw: bytes) -> str | None:
        """The host of an NCCL line's prefix (parsers/nccl_log.split), None when it has none. The
        host is read only from the text before the mark, so it is kept per distinct prefix."""
        m = _MARK_RE.search(raw)
        if m is None:
            return None
        head = raw[:m.start()]
        if head not in self._heads:
            fields = split(decode(raw))
            if len(self._heads) >= MAX_PREFIXES:
                self._heads.clear()
            self._heads[head] = host_key(fields[0]) if fields is not None and fields[0] else None
        return self._heads[head]

    def _part(self, raw: bytes, current: str | None) -> Scanner | None:
        owner = (self._host_of(raw) if b"NCCL" in raw else None) or current
        part = self.parts.get(owner if owner is not None else UNATTRIBUTED)
        if part is not None or owner in self.left_out:
            return part
        owner = cast(str, owner)  # None reads the UNATTRIBUTED part, which is always there
        if len(self.parts) > MAX_HOSTS:  # hosts past MAX_HOSTS: their lines are read by no part
            self.left_out.append(owner)
            return None
        # a host the first reading's summaries did not keep (the bulk path reads a message once)
        part = self.parts[owner] = Scanner(host=owner)
        for f in self.parts[UNATTRIBUTED].files:
            part.open_file(f.name)
        return part

    @staticmethod
    def _in_bulk(lines: list[bytes], owners: list[Scanner | None], nccl: list[bool], base: int) -> None:
        """A large block of mostly NCCL lines: each part reads its NCCL lines in bulk (the other lines
        blanked, so line numbers stay the file's), then its other lines one by one."""
        for part in {id(p): p for p, is_nccl in zip(owners, nccl) if p is not None and is_nccl}.values():
            mine = [p is part and is_nccl for p, is_nccl in zip(owners, nccl)]
            own = bytearray(b"\n".join(raw if m else b"" for raw, m in zip(lines, mine)) + b"\n")
            part.take_bulk(own, base, sum(mine), len(lines))
        after_nccl: set[int] = set()  # parts whose NCCL lines came since their last other line
        for n, (raw, owner, is_nccl) in enumerate(zip(lines, owners, nccl), base + 1):
            if owner is None:
                continue
            if is_nccl:
                after_nccl.add(id(owner))
                continue
            if id(owner) in after_nccl:  # an NCCL line ends a tool block, as on the line path
                owner.close_block()
                after_nccl.discard(id(owner))
            owner.take(raw, n)

    @staticmethod
    def _reopen(path: str, first: Scanner):
        if path != STDIN:
            return open_evidence(path)
        if first.stdin_copy is None:
            raise EvidenceError(f"<stdin>: several hosts pasted in more than {STDIN_COPY_MAX >> 20} MiB; save the paste "
                                "to a file and give its path, or paste each host's outputs alone")
        first.stdin_copy.seek(0)
        return first.stdin_copy


def read_by_host(paths: list[str], first: Scanner) -> tuple[dict[str, Scanner], list[str]]:
    """({part: its scanner} for the parts that hold a recognized line, the hosts left out), or
    ({}, []) for a paste of one host."""
    hosts = parts_of(first)
    if not hosts:
        return {}, []
    reading = HostParts(hosts)
    for path in paths:
        reading.read(path, first)
    # a part holds what the paste shows of its host: a prompt line alone (`root@gpu03:~# hostname`) is not that
    kept = {h: s for h, s in reading.parts.items() if any(k != "command" for f in s.files for k, *_ in f.segments)}
    return kept, reading.left_out
