"""The fast path of the segmenter: a block of NCCL lines read with a few C-speed scans.

The lines that say something (init, network, warnings) are picked out by one regular expression,
connection lines only for transports not seen before. What it reads as the line path does: every
failure (each WARN, ABORT or ERROR line and each INFO line that carries a failure hint, at every
occurrence: counts, hosts and details agree), every message whose values the reader keeps once
(version, networks and interfaces per host, plugin, environment, GPUDirect, channel counts,
transports as sets: shapes.py VALUE_RE), and every other message once per shape (shapes.py: the
message with its per-rank numbers and pointers made alike). What it summarizes: a message many
ranks print, word for word or but for their numbers, counts once, with the host of its first
occurrence; the hosts and devices are those of the lines read and of each block's first
SAMPLE_LINES; transports are looked for in VIA_WINDOW bytes at VIA_LOOKS places of each block, and the job
size in the first communicator line of each block and the first line of each shape. So the cost
follows the bytes and the shapes, not how many ranks print their own numbers.

A line is an NCCL line when its `NCCL ` begins an NCCL message (a level word follows). Prose that
only names NCCL (`ncclSystemError: ... check NCCL warnings`, `RuntimeError: NCCL error in: ...`)
is text for the line path: `rare()` gives such a mention as PROSE, so a block holding one is never
taken for a block of NCCL lines, and the line path reads that line.
"""

from __future__ import annotations

import itertools
import re

from allreduce_doctor.evidence.nccl import NcclLog
from allreduce_doctor.evidence.nccl_errors import FAIL_HINT_RE
from allreduce_doctor.evidence.reader import decode
from allreduce_doctor.evidence.shapes import is_value, shapes
from allreduce_doctor.parsers.nccl_log import split

# NCCL lines worth reading. Every rank prints the same few dozen lines; the per-rank chatter that
# would make every key distinct (connections and channel lists, trees, communicator lines) says
# nothing the transports scan and the job-size scan do not, and is skipped by its exact opening
# words (a first-character class also skipped `Call to connect returned Connection refused`).
# Every rank also prints a few init lines that no reader uses and that never carry a failure
# (NCCL v2.12.12-1 to v2.30.7-1: init.cc / transport/generic.cc "Connected all rings" and "Connected
# all trees", init.cc "P2P Chunksize set to %d", graph/tuning.cc "threadThresholds ...",
# graph/topo.cc "Setting affinity for GPU %d to %s"): skipped too, a third of the keys of a large log.
_CHATTER = (rb"Channel \d|Ring \d|Trees |comm 0x|ncclCommInitRank |Connected all |P2P Chunksize |threadThresholds |"
            rb"Setting affinity for GPU ")
# The levels debug.cc prints after `NCCL ` (ncclDebugLog: `NCCL INFO `, `FILE:LINE NCCL WARN `, v2.21.5-1)
# and the version line; the chatter test stands before
# the alternatives, which costs a tenth less than a test inside them. Group 1: the message, or b""
# where `NCCL ` begins none (prose).
PROSE = b""  # rare()'s item for an `NCCL ` that begins no NCCL message
_RARE_RE = re.compile(rb"NCCL (?!INFO:? (?:" + _CHATTER + rb"))((?:INFO:? |WARN|ABORT|ERROR|TRACE|version)[^\n]*|)")
# A key that may be a failure is read at every occurrence: the line path counts each one, with its
# host. The hints are nccl.py's own words (every INFO failure carries one), so the paths cannot drift;
# as plain substrings they cost a few `in` tests per new key, not a case-blind regex scan.
_FAIL_HINTS = tuple(word.encode() for word in FAIL_HINT_RE.pattern.lower().split("|"))
_ALERT_LEVELS = (b"warn", b"abort", b"error")
_LEVEL_WORDS = (b"WARN", b"ABORT", b"ERROR")  # as _RARE_RE reads them: a key that starts so is all of that level
_LEVEL_RE = re.compile(rb"NCCL ((?:WARN|ABORT|ERROR)[^\n]*)")
FIND_KEYS_MAX = 8  # failure keys in a block looked for one by one; past it, one scan finds them all
VIA_WINDOW = 64 << 10  # bytes scanned for transports not seen before, at VIA_LOOKS places of each bulk block
VIA_LOOKS = 4
_NODES_RE = re.compile(rb"comm 0x\w+ rank \d+ nRanks (\d+) nNodes (\d+) localRanks (\d+)")
_RANKS_RE = re.compile(rb"comm 0x\w+ rank \d+ n[Rr]anks (\d+)()()")
_VIA = rb" via (NET/[^/\n]+/\S+|\S+)"
_CONN_LINE_RE = re.compile(rb"NCCL INFO:? (?:Channel|Ring) \d")  # the connection lines nccl.py reads (CONN_RE)
# A communicator line that is chatter but for one fact: ranks on two hosts that completed init
# (nccl.py init_across_hosts). The first few of each block are looked at, each new host's read.
_INIT_DONE = b"- Init COMPLETE\n"
INIT_LOOKS = 64
SAMPLE_LINES = 64  # lines of each block whose host and device are read (srun interleaves 64 ranks)
PLAIN, VALUE, ALERT = 0, 1, 2  # a shape read once; read message by message; read at every line


def _level_starts(buf: bytearray, start: int, end: int, keys: set[bytes]) -> list[int]:
    """The start of each line in buf[start:end] whose rare() message is one of `keys` (all of an alert
    level): a scan that stops only at those levels, not at every message."""
    out = []
    for m in _LEVEL_RE.finditer(buf, start, end):
        if m.group(1) not in keys:
            continue
        bol = buf.rfind(b"\n", start, m.start()) + 1 or start
        if buf.rfind(b"NCCL ", bol, m.start()) >= 0 and not any(  # an earlier message of the line may hold it
                r.start() == m.start() for r in _RARE_RE.finditer(buf, bol, m.start() + 5)):
            continue
        out.append(bol)
    return out


def rare(buf: bytearray | bytes, start: int = 0, end: int | None = None) -> list[bytes]:
    """Each NCCL message worth reading in buf[start:end], after its `NCCL ` (PROSE for prose)."""
    return _RARE_RE.findall(buf, start, len(buf) if end is None else end)


def all_nccl(buf: bytearray, start: int, end: int, lines: int, found: list[bytes], keys: set[bytes]) -> bool:
    """Whether each of the `lines` lines is one NCCL line: one `NCCL ` each, none prose (`found` is
    rare() of the block, `keys` its set). A message that quotes `NCCL ` is one line: init.cc
    showVersion prints INFO("%s", "NCCL version ...") (v2.12.12-1, v2.21.5-1: rank 0 of every
    communicator; v2.30.4-1: once a process)."""
    if PROSE in keys:
        return False
    quoted = b"\n".join(found).count(b"NCCL ")  # no message holds a newline: none spans two
    return buf.count(b"NCCL ", start, end) - quoted == lines


def prose_starts(buf: bytearray, start: int, end: int) -> list[int]:
    """Where each line that names NCCL in prose starts (sorted, once each)."""
    return sorted({buf.rfind(b"\n", start, m.start()) + 1 or start
                   for m in _RARE_RE.finditer(buf, start, end) if not m.group(1)})


def line_index(buf: bytearray, start: int, bols: list[int]) -> list[int]:
    """The index (from 0) of each line start in `bols` (sorted) among the lines from `start`."""
    out, index, at = [], 0, start
    for bol in bols:
        index += buf.count(b"\n", at, bol)
        at = bol
        out.append(index)
    return out


def _line_numbers(buf: bytearray, start: int, end: int, base: int, lines: int, bols: list[int]) -> list[int]:
    """The line number of each line start in `bols` (sorted) of the `lines` lines in buf[start:end],
    from line base+1. The first ones are counted from the block's start and the last ones back
    from its end, split at the widest gap between two starts: the newlines counted are the
    fewest (a failure near the end of a block no longer costs a count of the whole block)."""
    if not bols:
        return []
    edges = [start, *bols, end]
    split = max(range(len(bols) + 1), key=lambda i: edges[i + 1] - edges[i])  # bols[:split] forward
    numbers = [base + 1 + i for i in line_index(buf, start, bols[:split])]
    tail, lineno, at = [], base + lines + 1, end  # one past the last line
    for bol in reversed(bols[split:]):
        lineno -= buf.count(b"\n", bol, at)
        at = bol
        tail.append(lineno)
    return numbers + tail[::-1]


def _may_fail(key: bytes) -> bool:
    low = key.lower()
    # nccl.py also counts a bootstrap.cc error trace (`bootstrap.cc:100 -> 2`) as a failure: no hint word in it
    return low.startswith(_ALERT_LEVELS) or any(word in low for word in _FAIL_HINTS) or \
        (b"bootstrap.cc:" in low and b" -> " in low)


class BulkReader:
    """What the fast path remembers across the blocks of one reading: the shapes classified, the
    messages of a kept value read, the transports seen."""

    def __init__(self, nccl: NcclLog) -> None:
        self.nccl = nccl
        self._kinds: dict[bytes, int] = {}  # shape -> PLAIN, VALUE or ALERT
        self._seen: set = set()  # the VALUE messages read
        self._known_via: list[bytes] = []
        self._via_re: re.Pattern | None = None
        self._init_hosts: set[bytes] = set()  # hosts whose Init COMPLETE line was read

    def read(self, name: str, buf: bytearray, start: int, end: int, base: int, count: int, lines: int,
             found: list[bytes] | None = None) -> None:
        """Read the NCCL lines of buf[start:end] (`count` of its `lines`, from line base+1) in bulk;
        `found` is rare() of it, when known."""
        nccl = self.nccl
        nccl.lines += count
        nccl.where.add_range(name, base + 1, base + lines)
        found = rare(buf, start, end) if found is None else found
        new, alerts = self._wanted(dict.fromkeys(found))
        starts = self._starts(buf, start, end, found, new, alerts) + self._init_starts(buf, start, end)
        bols = sorted(set(starts))  # in line order, as the line path reads them
        for bol, lineno in zip(bols, _line_numbers(buf, start, end, base, lines, bols)):
            nccl.feed_quiet(decode(buf[bol:buf.index(b"\n", bol, end)]), f"{name}:{lineno}")
        self._sample_hosts(buf, start, end)
        size = _NODES_RE.search(buf, start, end) or _RANKS_RE.search(buf, start, end)  # every rank says the same
        if size is not None:
            nccl.job_size(int(size.group(1)), int(size.group(2)) if size.group(2) else None,
                          int(size.group(3)) if size.group(3) else None)
        for look in range(VIA_LOOKS):  # srun prints a group's connection lines after its init lines
            at = start if not look else buf.find(b"\n", start + (end - start) * look // VIA_LOOKS, end) + 1 or end
            window = buf.find(b"\n", min(end - 1, at + VIA_WINDOW), end) + 1 or end  # whole lines only
            self._transports(buf, at, window)

    def _wanted(self, keys: dict[bytes, None]) -> tuple[set, set]:
        """(the messages whose first line is read, those read at every line) of a block's messages:
        the first message of each shape not seen before, each VALUE message not read before, and
        every message of an ALERT shape. Most blocks have no shape that is new and none that is a failure."""
        order = [key for key in keys if key != PROSE] if PROSE in keys else list(keys)
        forms = shapes(order)
        first = dict(zip(reversed(forms), reversed(order)))  # shape -> its first message in the block
        kinds = self._kinds
        fresh = {form: ALERT if _may_fail(key) else VALUE if is_value(key) else PLAIN
                 for form, key in first.items() if form not in kinds}
        if len(kinds) < 200_000:  # past it, a shape is only classified again
            kinds.update(fresh)
        new = {first[form] for form, kind in fresh.items() if kind == PLAIN}
        special = {form for form in first if fresh.get(form, kinds.get(form)) != PLAIN}
        if not special:
            return new, set()
        alerts: set[bytes] = set()
        values: set[bytes] = set()
        for key, form in zip(order, forms):
            if form in special:
                (alerts if fresh.get(form, kinds.get(form)) == ALERT else values).add(key)
        values -= self._seen
        if len(self._seen) < 200_000:
            self._seen |= values
        return new | values, alerts

    def _sample_hosts(self, buf: bytearray, start: int, end: int) -> None:
        """The host and device of the first SAMPLE_LINES lines: the hosts and ranks per host of lines
        the shapes leave unread (nccl.py hosts; before v2.19 no communicator line says localRanks)."""
        at = start
        for _ in range(SAMPLE_LINES):
            nl = buf.find(b"\n", at, end)
            if nl < 0:
                return
            parts = split(decode(buf[at:nl]))
            if parts is not None and parts[0] is not None:
                self.nccl.add_host(parts[0], parts[1])
            at = nl + 1

    @staticmethod
    def _starts(buf: bytearray, start: int, end: int, found: list[bytes], new: set, alerts: set) -> list[int]:
        """The line starts to read: the first line of each new key, every line of each failure key.
        The first lines are the rare() matches at the index of each new key's first place in `found`
        (the matches between them skipped at C speed). A few failure keys are found one by one; many
        (every rank's own completion error names its peer) in one scan: of the alert levels for WARN,
        ABORT and ERROR keys, of every message for INFO ones."""
        starts = []
        if new:
            first = dict(zip(reversed(found), range(len(found) - 1, -1, -1)))  # key -> its first index
            matches, prev = _RARE_RE.finditer(buf, start, end), -1
            for index in sorted(first[key] for key in new):
                m = next(itertools.islice(matches, index - prev - 1, None))
                prev = index
                starts.append(buf.rfind(b"\n", start, m.start()) + 1 or start)
        if len(alerts) <= FIND_KEYS_MAX:
            few, infos = alerts, set()
        else:
            levels = {key for key in alerts if key.startswith(_LEVEL_WORDS)}
            infos = alerts - levels
            few = infos if len(infos) <= FIND_KEYS_MAX else set()
            infos -= few
            starts += _level_starts(buf, start, end, levels)
        for key in few:  # every line whose message it is
            key = b"NCCL " + key
            at = buf.find(key, start, end)
            while at >= 0:
                if buf.startswith(b"\n", at + len(key)):
                    starts.append(buf.rfind(b"\n", start, at) + 1 or start)
                at = buf.find(key, at + len(key), end)
        for m in _RARE_RE.finditer(buf, start, end) if infos else ():
            if m.group(1) in infos:
                starts.append(buf.rfind(b"\n", start, m.start()) + 1 or start)
        return starts

    def _init_starts(self, buf: bytearray, start: int, end: int) -> list[int]:
        """The Init COMPLETE lines to read: of the block's first INIT_LOOKS, those of a host not read
        before, until two hosts of one communicator completed init."""
        if self.nccl.init_across_hosts():
            return []
        out, at = [], buf.find(_INIT_DONE, start, end)
        for _ in range(INIT_LOOKS):
            if at < 0:
                break
            bol = buf.rfind(b"\n", start, at) + 1 or start
            host = bytes(buf[bol:buf.find(b":", bol, at)])
            if host not in self._init_hosts:
                self._init_hosts.add(host)
                out.append(bol)
            at = buf.find(_INIT_DONE, at + len(_INIT_DONE), end)
        return out

    def _transports(self, buf: bytearray, pos: int, end: int) -> None:
        """Connection lines: only transports not seen before are read (one scan when none is new); a
        token first seen in another line (CollNet's) is skipped from then on, as the line path skips it."""
        while True:
            if self._via_re is None:
                alts = b"|".join(re.escape(t) for t in self._known_via)
                self._via_re = re.compile((rb" via (?!(?:" + alts + rb")\s)" if alts else rb" via ") + _VIA[5:])
            m = self._via_re.search(buf, pos, end)
            if m is None:
                return
            token = bytes(m.group(1))
            if token in self._known_via or len(self._known_via) >= 64:
                pos = m.end()  # a token cut by the window's end, or too many kinds: move on
                continue
            self._known_via.append(token)
            self._via_re = None
            bol = buf.rfind(b"\n", 0, m.start()) + 1
            if _CONN_LINE_RE.search(buf, bol, m.start()):  # as nccl.py reads them: not coll_net.cc `CollNet %02d/%1d`
                self.nccl.connection(decode(token))
            pos = m.start()
