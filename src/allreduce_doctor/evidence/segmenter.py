"""The streaming segmenter: read each evidence file block by block, give every line to the
recognizer it belongs to, and keep the segments (runs of one kind of text) for the report.

Two paths, one result. A block whose every line is an NCCL line (the bulk of a large log) is
read with a few C-speed scans (bulk.py says what that path reads and what it summarizes); a large
block with a few other lines is read in bulk for its NCCL lines and line by line for the rest; any
other block is read line by line. Memory is bounded by the block size and the (capped) summaries,
never by the file size.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re

from allreduce_doctor.errors import ParseError
from allreduce_doctor.evidence import bulk, tools
from allreduce_doctor.evidence.env import EnvLog
from allreduce_doctor.evidence.lines import Examples
from allreduce_doctor.evidence.nccl import NcclLog
from allreduce_doctor.evidence.node_facts import host_key
from allreduce_doctor.evidence.reader import STDIN, BlockReader, decode, display_name, is_binary, open_evidence
from allreduce_doctor.evidence.report_words import ReportWords
from allreduce_doctor.evidence.tests_table import TestsLog
from allreduce_doctor.parsers import parse

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from tempfile import SpooledTemporaryFile

MAX_SEGMENTS = 300
GAP = 5  # lines of other text a segment may skip over and still continue
BULK_MIN = 4000  # lines: smaller blocks are read line by line, exactly
STDIN_COPY_MAX = 256 << 20  # bytes of stdin kept to read again when several hosts are pasted
_TOOL_CMD_RE = re.compile(
    # a shell prompt naming its host (`root@gpu01:~# `, `[user@gpu01 ~]$ `) or `ssh [-o X] [user@]HOST `
    rf"^[\s$#>_*`]*(?:{tools.PROMPT_HOST})?"
    r"(?:ssh\s+(?:-\S+\s+(?:\S+\s+)?)*?(?:[\w.-]+@)?(?P<ssh_host>[\w.-]+)\s+)?"
    r"(?:sudo\s+)?(?:/\S+/)?(ibstat|ibstatus|ibv_devinfo|ibv_devices|show_gids|ibdev2netdev|ethtool|mlnx_qos|"
    r"lspci|setpci|nvidia-smi|dmesg|journalctl|cat\s+/proc/cmdline|rdma|ip\s+(?:-\w+\s+)?(?:link|addr)|perfquery|"
    r"iblinkinfo|ibnetdiscover|sminfo|ib_write_bw|ib_send_bw|ibping|lsmod|modinfo|smpquery|dcb|fi_info|df|"
    r"(?:grep|cat|head|tail)\s+.*?/sys/)\b.{0,200}$")
# Quote and comment marks a paste may carry before its text: mail `> `, shell `# `, `// `, bullets.
_QUOTE_RE = re.compile(r"^\s*(?:(?:>+|#+|//|[*-](?=\s))\s*)+")
_IFACE_ARG_RE = re.compile(r"(?:-i|-S|--statistics|\bdev)\s+(\S+)|ethtool\s+(\w[\w.-]*)\s*$")


def _indices(values: list, value) -> list[int]:
    """Where `value` stands in `values` (list.index finds each: no Python loop over the others)."""
    found: list[int] = []
    at = -1
    while True:
        try:
            at = values.index(value, at + 1)
        except ValueError:
            return found
        found.append(at)


class FileReport:
    """What one file held: its segments, its unplaced lines, and how it was read."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lines = 0
        self.bytes = 0
        self.cut_lines = 0
        self.binary_lines = 0
        self.segments: list[list] = []  # [kind, first, last, lines]
        self.more_segments = 0
        self.unplaced = Examples(5)
        self.recognized = 0

    def mark(self, kind: str, first: int, last: int | None = None, count: int = 1) -> None:
        last = first if last is None else last
        self.recognized += count
        if self.segments:  # only the latest segment grows, so segments never overlap
            seg = self.segments[-1]
            if seg[0] == kind and first - seg[2] <= GAP + 1:
                seg[2], seg[3] = max(seg[2], last), seg[3] + count
                return
        if len(self.segments) < MAX_SEGMENTS:
            self.segments.append([kind, first, last, count])
        else:
            self.more_segments += 1

    def place_late(self, kind: str, lineno: int) -> None:
        """An unplaced line found to count once the file was read (a report's words, evidence/report_words.py):
        recognized, in its segment in line order, and no longer among the unplaced."""
        self.recognized += 1
        where = f"{self.name}:{lineno}"
        self.unplaced.count -= 1
        self.unplaced.items = [item for item in self.unplaced.items if item["line"] != where]
        at = bisect.bisect(self.segments, lineno, key=operator.itemgetter(1))
        before = self.segments[at - 1] if at else None
        if before is not None and before[0] == kind and lineno - before[2] <= GAP + 1 \
                and (at == len(self.segments) or self.segments[at][1] > lineno):
            before[2], before[3] = max(before[2], lineno), before[3] + 1
        elif len(self.segments) < MAX_SEGMENTS:
            self.segments.insert(at, [kind, lineno, lineno, 1])
        else:
            self.more_segments += 1

    def to_dict(self) -> dict:
        return {
            "file": self.name, "lines": self.lines, "bytes": self.bytes, "recognized_lines": self.recognized,
            "segments": [{"kind": k, "lines": f"{a}-{b}" if a != b else str(a), "first": a, "last": b, "count": n}
                         for k, a, b, n in self.segments],
            "segments_left_off": self.more_segments,
            "unplaced": {"count": self.unplaced.count, "examples": self.unplaced.items},
            "cut_lines": self.cut_lines, "binary_lines": self.binary_lines,
        }


class Scanner:
    """One reading of the evidence. `host` fixes the host of every block it closes: the scanner of
    one host's part of a paste (evidence/hosts.py gives it only that host's lines); `symptom` the one the
    user gave (report_words.py: a text that names NCCL then describes trouble)."""

    def __init__(self, host: str | None = None, symptom: str | None = None) -> None:
        self.nccl = NcclLog()
        self.env = EnvLog()
        self.tests = TestsLog()
        self.blocks: list[dict] = []  # closed tool blocks, parsed
        self.cmdlines: list[tuple[str, str]] = []  # (text, where)
        self.files: list[FileReport] = []
        self._open: tools.Block | None = None
        self._report: FileReport = None  # type: ignore[assignment]  # set by each file's start, before any line
        self._iface: str | None = None  # the interface a pasted command named (mlnx_qos -i X)
        self._host: str | None = host  # the host a pasted command's prompt or ssh named
        self._one_host = host is not None
        self.named: list[tuple[str, int, str]] = []  # (file, line, host) where the paste names a host
        self.stdin_copy: SpooledTemporaryFile[bytes] | None = None  # what stdin gave, to read again per host (STDIN_COPY_MAX at most)
        self.bulk = bulk.BulkReader(self.nccl)
        self.words = ReportWords(symptom)  # the reporter's own words: prose lines nothing else placed

    # -- files --------------------------------------------------------------------------
    def scan(self, path: str) -> FileReport:
        name = display_name(path)
        report = self.open_file(name)
        stream = open_evidence(path)
        copy = None
        if path == STDIN:
            import tempfile  # only stdin is kept (and tempfile pulls in shutil and random)

            copy = self.stdin_copy = tempfile.SpooledTemporaryFile(1 << 20)  # noqa: SIM115 (kept for a second read)
        try:
            reader = BlockReader(stream, name)
            for buf, start, end in reader:
                if copy is not None and copy.tell() + end - start > STDIN_COPY_MAX:
                    copy.close()  # too large to keep: this paste is read once (one host's facts)
                    copy = self.stdin_copy = None
                elif copy is not None:
                    copy.write(buf[start:end])
                self._block(buf, start, end)
            report.bytes, report.cut_lines = reader.bytes, reader.cut_lines
        finally:
            if stream is not None and path != "-":
                stream.close()
        self._close()
        self.words.end_file(report)
        return report

    def open_file(self, name: str) -> FileReport:
        report = self._report = FileReport(name)
        self.files.append(report)
        return report

    def take(self, raw: bytes, lineno: int) -> None:
        """One line given by the reader of a host's part (the line path: exact)."""
        self._report.lines = lineno
        self.line(raw, lineno)

    def take_bulk(self, buf: bytearray, base: int, count: int, lines: int) -> None:
        """`lines` lines from line base+1, `count` of them this part's NCCL lines (the rest blank), in bulk."""
        self._close()
        self.bulk.read(self._report.name, buf, 0, len(buf), base, count, lines)
        self._report.mark("nccl_log", base + 1, base + lines, count)
        self._report.lines = base + lines

    def close_block(self) -> None:
        self._close()

    def close_file(self, lines: int, size: int) -> None:
        """The end of a file read through take()."""
        self._close()
        self._report.lines, self._report.bytes = lines, size
        self.words.end_file(self._report)

    def _block(self, buf: bytearray, start: int, end: int) -> None:
        report = self._report
        n = buf.count(b"\n", start, end)
        lines = None
        if n >= BULK_MIN and buf.find(b"\x00", start, end) < 0:
            found = bulk.rare(buf, start, end)
            keys = set(found)
            if bulk.all_nccl(buf, start, end, n, found, keys):
                self._close()
                self.bulk.read(report.name, buf, start, end, report.lines, n, n, found)
                report.mark("nccl_log", report.lines + 1, report.lines + n, n)
                report.lines += n
                return
            lines = buf[start:end].split(b"\n")
            has = list(map(operator.contains, itertools.islice(lines, n), itertools.repeat(b"NCCL ")))  # C speed
            prose = bulk.prose_starts(buf, start, end) if bulk.PROSE in keys else []
            for i in bulk.line_index(buf, start, prose):  # prose that names NCCL: read line by line
                has[i] = False
            if has.count(False) * 10 <= n:  # a large log with a few other lines: NCCL in bulk, the rest one by one
                self._mixed(buf, start, end, lines, _indices(has, False), n, found, bool(prose))
                return
        base = report.lines
        for i, raw in enumerate((lines if lines is not None else buf[start:end].split(b"\n"))[:-1]):
            report.lines = base + i + 1
            self.line(raw, report.lines)
        report.lines = base + n

    def _mixed(self, buf: bytearray, start: int, end: int, lines: list, others: list[int], n: int,
               found: list[bytes], prose: bool) -> None:
        """The NCCL lines in bulk, the others one by one. Prose that names NCCL may say what an NCCL line
        says too (the version), and the first one read wins: then each run of NCCL lines is read in
        bulk in its place, in line order, as the line path reads them."""
        report = self._report
        base = report.lines
        self._close()
        if not prose:
            self.bulk.read(report.name, buf, start, end, base, n - len(others), n, found)
        else:  # where each line starts: C-speed sums of the line lengths
            at = list(itertools.accumulate(map((1).__add__, map(len, lines)), initial=start))
        prev = -1
        for i in others + [n]:
            if i > prev + 1:  # the NCCL lines between two other lines
                self._close()
                if prose:
                    self.bulk.read(report.name, buf, at[prev + 1], at[i], base + prev + 1, i - prev - 1, i - prev - 1)
                report.mark("nccl_log", base + prev + 2, base + i, i - prev - 1)
            if i < n:
                self.line(lines[i], base + i + 1)
            prev = i
        report.lines = base + n

    # -- the line path ------------------------------------------------------------------
    def line(self, raw: bytes | bytearray, lineno: int) -> None:
        report = self._report
        where = f"{report.name}:{lineno}"
        if is_binary(raw):
            report.binary_lines += 1
            report.unplaced.add(where, "<binary data>")
            self._close()
            return
        text = decode(raw)
        stripped = text.strip()
        if not stripped or tools.NEUTRAL_RE.match(text):
            return
        if ("NCCL" in text or "libibverbs:" in text or "nccl==" in text) and self.nccl.feed(text, where):
            self._close()
            report.mark("nccl_log", lineno)
            return
        block = self._open
        if block is not None and (block.tool.more.match(text) or block.tool.start.match(text)) \
                and len(block.lines) < tools.MAX_BLOCK_LINES:
            block.lines.append(text)
            block.last = lineno
            report.mark(block.tool.name, lineno)
            return
        if "@" in text and not self._one_host and (m := tools.PROMPT_HOST_RE.match(text)) is not None:
            self._close()  # the output before the prompt is the previous host's
            self._name_host(m.group("prompt_host"), lineno)  # any command typed at a host's prompt
        tool = tools.starts(text)
        if tool is not None:
            self._close()
            self._open = tools.Block(tool, lineno, lineno, [text])
            report.mark(tool.name, lineno)
            return
        self._close()
        self._other(text, lineno, where)

    def _other(self, text: str, lineno: int, where: str) -> None:
        report = self._report
        if self.tests.feed(text, where):
            report.mark("nccl_tests", lineno)
        elif tools.is_cmdline(text):
            self.cmdlines.append((text.strip().strip("'\""), where))
            report.mark("proc_cmdline", lineno)
        elif (kind := self.env.feed(text, where)) is not None:
            report.mark(kind, lineno)
            self.words.read(text, where)  # "export NCCL_P2P_DISABLE=1 fixed it": a setting tried, too
        elif (m := _TOOL_CMD_RE.match(text)) is not None:
            arg = _IFACE_ARG_RE.search(text)
            self._iface = (arg.group(1) or arg.group(2)) if arg else None
            # the host the output comes from, when the paste says (kept until another one is named)
            named = m.group("ssh_host") or m.group("prompt_host")
            if named and not self._one_host:
                self._name_host(named, lineno)
            report.mark("command", lineno)
        elif tools.PROMPT_HOST_RE.match(text) is not None:
            report.mark("command", lineno)  # a command at a named host's prompt: its host, nothing to read
        elif (quote := _QUOTE_RE.match(text)) is not None and text[quote.end():].strip():
            self.line(text[quote.end():].encode(), lineno)  # the same line without its quote marks
        elif self.nccl.bare(text, where):
            report.mark("signature", lineno)
        else:
            report.unplaced.add(where, text.strip())
            self.words.read(text, where, lineno)

    def _name_host(self, named: str, lineno: int) -> None:
        """The paste says the lines from here on are `named`'s (kept until another host is named)."""
        where = (self._report.name, lineno)
        if self.named and self.named[-1][:2] == where:
            self.named[-1] = (*where, named)  # `root@gpu01:~# ssh gpu02 ibstat`: the ssh target's
        else:
            self.named.append((*where, named))
        self._host, self.env.host = named, host_key(named)

    def _close(self) -> None:
        block, self._open = self._open, None
        if block is None:
            return
        entry = {"tool": block.tool.name, "file": self._report.name, "first": block.first, "last": block.last,
                 "where": f"{self._report.name}:{block.first}" + (f"-{block.last}" if block.last != block.first else ""),
                 "iface": self._iface, "host": self._host, "value": None, "error": None, "lines": None}
        if block.tool.name == "nvidia_smi_nvlink":  # nvlink -s, or only the GPU list of nvidia-smi -L
            entry["links_listed"] = any(line.lstrip().startswith(("Link", "NVML:")) for line in block.lines)
        if block.tool.refuse is not None:
            entry["error"] = block.tool.refuse
        elif block.tool.parser is not None:
            try:
                entry["value"] = parse(block.tool.parser, block.text())
            except ParseError as err:
                entry["error"] = str(err)
        else:
            entry["lines"] = block.lines[:2000]
        self._iface = None
        if len(self.blocks) < 500:
            self.blocks.append(entry)
