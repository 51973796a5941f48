"""The benchmarks' output, read through the project's parsers: the one door validate uses, so the
nccl-tests parser can move (evidence/tests_table.py today) by changing one import here."""

from __future__ import annotations

import re

from allreduce_doctor.evidence.tests_table import TestsLog

# perftest's result line (perftest src/perftest_parameters.c, REPORT_FMT with --report_gbits):
#  #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
#  65536      1000           97.52              97.48                0.185927
PERFTEST_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s*$")


def nccl_tests_run(text: str, where: str) -> dict | None:
    """The main run in an nccl-tests output (evidence/tests_table.py's summary), or None."""
    log = TestsLog()
    for number, line in enumerate(text.splitlines(), 1):
        log.feed(line, f"{where}:{number}")
    return log.summary()["main"]


def perftest_gbits(text: str) -> float | None:
    """The average bandwidth (Gb/s) of an ib_write_bw run printed with --report_gbits."""
    rows = [m for m in map(PERFTEST_ROW.match, text.splitlines()) if m]
    return float(rows[-1].group(4)) if rows else None


class NcclTestsFeed:
    """One benchmark's nccl-tests output fed as it arrives: the size rows so far (the TUI's live
    busbw per size), through the same parser as the judge."""

    def __init__(self, where: str) -> None:
        self.log, self.where, self.partial, self.lines = TestsLog(), where, "", 0

    def feed(self, text: str) -> None:
        lines = (self.partial + text).split("\n")
        self.partial = lines.pop()
        for line in lines:
            self.lines += 1
            self.log.feed(line, f"{self.where}:{self.lines}")

    def rows(self) -> list[dict]:
        """[{size, out_of_place: {busbw, ...}, in_place: {...}}] of the latest run, in order."""
        return list(self.log.runs[-1].rows) if self.log.runs else []
