"""nccl-tests output (all_reduce_perf and the other collectives): the run header, the ranks and
their hosts, the result table (per size: time, algbw, busbw, #wrong, out-of-place and in-place),
the average bus bandwidth. Old versions print `error` instead of `#wrong`, some collectives have
no `redop` or `root` column, and copies lose alignment: rows are read as tokens.
"""

from __future__ import annotations

from allreduce_doctor.evidence.lines import Where
from allreduce_doctor.parsers.nccl_tests import (
    AVG_RE,
    COLLECTIVE_RE,
    COLUMNS_RE,
    FAIL_RE,
    HEADER_RE,
    OOB_RE,
    PLACE_RE,
    PREFIX_RE,
    RANK_RE,
    RANK_V1_RE,
    START_RE,
    UNITS_RE,
    UNMARKED_RE,
    parse_row,
)

# Message sizes from here on show the bandwidth a link can sustain; below it a size is latency-bound. NCCL's own
# model (NVIDIA/nccl src/graph/tuning.cc, ncclTopoGetAlgoTime: time = latency + size / bandwidth, the ring's base
# latency 8.4 us for Simple plus a per-step hardware latency for each of its 2(n-1) steps) gives tens of us of
# latency per call: at 32 MiB and 370 GB/s the transfer takes ~90 us, below it the latency term is no longer small.
LARGE = 32 << 20
MAX_ROWS = 400
# The columns nccl-tests prints (NVIDIA/nccl-tests src/common.cu; `error` before 2.13, `cputime` with -C) and its
# forks keep: rccl-tests prints the same header, or its in-place half alone with -O 0 (ROCm/rccl-tests src/common.cu
# @ae3e635, testAll). NCCL 1.x's tests named them `bytes N type op`. A header naming any other column is another
# tool's table, whose numbers are not nccl-tests' busbw: it is named and not judged (issue 28 item 5).
COLUMNS = {"size", "count", "type", "redop", "root", "time", "cputime", "algbw", "busbw", "#wrong", "error",
           "bytes", "n", "op", "res"}
FOREIGN = ("the table's columns ({cols}) are not nccl-tests' (size count type redop root time algbw busbw #wrong), "
           "so its busbw is not judged; paste all_reduce_perf output")
SIZES_DOWN = ("the table's sizes go back down ({a} B, then {b} B): the rows of more than one run are mixed in it, so "
              "its busbw is not judged; paste the output of one run")
SEVERAL_RUNS = ("the paste holds {n} nccl-tests runs (each `# nThread` header starts one): which one to judge is not "
                "known, so no busbw is judged; paste the output of one run")


class Run:
    def __init__(self, where: str) -> None:
        self.where = where
        self.header: dict = {}
        self.ranks: dict[int, dict] = {}
        self.rows: list[dict] = []
        self.avg_busbw: float | None = None
        self.oob: int | None = None
        self.failures: list[str] = []
        self.foreign: list[str] = []  # column names of the header that nccl-tests never prints
        self.collective: str | None = None  # the `Collective test starting:` line's program, "all_reduce"
        self.one_process = False  # NCCL 1.x's tests: every GPU in one process, so on one host

    def summary(self) -> dict:
        hosts = sorted({r["host"] for r in self.ranks.values() if r["host"]})
        sizes = [r["size"] for r in self.rows]
        large = [r for r in self.rows if r["size"] >= LARGE] or \
            ([r for r in self.rows if r["size"] >= max(sizes) // 2] if sizes and max(sizes) >= 1 << 20 else [])
        peak = max((max(h["busbw"] for h in (r["out_of_place"], r["in_place"]) if h) for r in large), default=None)
        wrong = sum(h["wrong"] for r in self.rows for h in (r["out_of_place"], r["in_place"])
                    if h and isinstance(h.get("wrong"), (int, float)))
        gpus = sorted({r["gpu"] for r in self.ranks.values() if r["gpu"]})
        down = next(((a, b) for a, b in zip(sizes, sizes[1:]) if b < a), None)
        per_host: dict[str, int] = {}
        for r in self.ranks.values():
            per_host[r["host"]] = per_host.get(r["host"], 0) + 1
        return {
            "source": self.where, "threads": self.header.get("threads"), "gpus_per_thread": self.header.get("gpus"),
            "min_bytes": self.header.get("min_bytes"), "max_bytes": self.header.get("max_bytes"),
            "ranks": len(self.ranks) or None, "hosts": hosts[:64],
            "ranks_per_host": max(per_host.values(), default=None), "nodes": len(hosts) or (1 if self.one_process else None),
            "gpu_models": gpus[:8], "rows": len(self.rows), "sizes": [sizes[0], sizes[-1]] if sizes else [],
            "peak_busbw_large": peak, "largest_size": max(sizes) if sizes else None,
            "avg_busbw": self.avg_busbw, "wrong": wrong, "out_of_bounds": self.oob,
            "completed": self.avg_busbw is not None, "failures": self.failures[:5],
            "table": self.rows[-12:], "collective": self.collective,
            "unjudged": FOREIGN.format(cols=" ".join(self.foreign)) if self.foreign else
            SIZES_DOWN.format(a=down[0], b=down[1]) if down else None,
            # Every size (MAX_ROWS at most) as [size, algbw, busbw] of its better half: the curve --format csv writes.
            "curve": [_point(r) for r in self.rows],
        }


def _point(row: dict) -> list:
    best = max((h for h in (row["out_of_place"], row["in_place"]) if h), key=lambda h: h["busbw"])
    return [row["size"], best["algbw"], best["busbw"]]


class TestsLog:
    """Every nccl-tests run in the evidence, in order."""

    def __init__(self) -> None:
        self.runs: list[Run] = []
        self.where = Where()

    def _run(self, where: str, new: bool = False) -> Run:
        if new or not self.runs or (self.runs[-1].avg_busbw is not None):
            if len(self.runs) >= 32:
                self.runs.pop(0)
            self.runs.append(Run(where))
        return self.runs[-1]

    def feed(self, text: str, where: str) -> bool:
        line = PREFIX_RE.sub("", text, count=1).rstrip()
        if not line:
            return False
        if line.startswith("#"):
            return self._comment(line, where)
        if UNMARKED_RE.match(line):
            return self._comment("# " + line.lstrip().lstrip("\"'`"), where)
        row = parse_row(line)
        if row is not None:
            run = self._run(where)
            if len(run.rows) < MAX_ROWS:
                run.rows.append(row)
            self.where.add(where)
            return True
        if FAIL_RE.search(line) and self.runs:
            self.runs[-1].failures.append(line.strip()[:200])
            self.where.add(where)
            return True
        return False

    def _comment(self, line: str, where: str) -> bool:
        if line.strip() == "#":  # nccl-tests separates its header blocks with a bare '#'
            if not self.runs:
                return False
            self.where.add(where)
            return True
        m = HEADER_RE.match(line)
        if (c := COLLECTIVE_RE.match(line)) is not None:  # printed before the run's header: a new run starts here
            run = self._run(where, new=bool(self.runs and (self.runs[-1].rows or self.runs[-1].header)))
            run.collective = c.group(1)
        elif m:
            run = self._run(where, new=bool(self.runs and (self.runs[-1].rows or self.runs[-1].header)))
            run.header = {"threads": int(m.group(1)), "gpus": int(m.group(2)), "min_bytes": int(m.group(3)),
                          "max_bytes": int(m.group(4))}
        elif (m := RANK_RE.match(line)) is not None:
            run = self._run(where)
            if len(run.ranks) < 100_000:
                run.ranks[int(m.group(1))] = {"host": m.group(2), "device": int(m.group(3)), "gpu": m.group(5) or None}
        elif (m := RANK_V1_RE.match(line)) is not None:
            run = self._run(where)
            run.one_process = True
            if len(run.ranks) < 100_000:
                run.ranks[int(m.group(1))] = {"host": None, "device": int(m.group(2)), "gpu": m.group(4) or None}
        elif (m := AVG_RE.match(line)) is not None:
            if not self.runs:
                self._run(where)
            self.runs[-1].avg_busbw = float(m.group(1))
        elif (m := OOB_RE.match(line)) is not None:
            if not self.runs:
                self._run(where)
            self.runs[-1].oob = int(m.group(1))
        elif COLUMNS_RE.match(line):
            run = self._run(where)
            run.foreign = [c for c in line.lstrip("#").split() if c.lower() not in COLUMNS][:8]
        elif not (UNITS_RE.match(line) or PLACE_RE.match(line) or START_RE.match(line)):
            return False
        self.where.add(where)
        return True

    def summary(self) -> dict:
        runs = [r.summary() for r in self.runs]
        main = max(runs, key=lambda r: (r["largest_size"] or 0, r["rows"], r["avg_busbw"] is not None), default=None)
        measured = [r for r in runs if r["rows"]]
        if main is not None and len(measured) > 1:
            main = main | {"unjudged": SEVERAL_RUNS.format(n=len(measured))}
        return {"runs": runs, "main": main}
