"""What a report of NCCL trouble says in the reporter's own words (signatures/report_words.yaml).

Many reports carry no NCCL output line at all: a title, a few sentences, what was tried. The segmenter
gives this reader the prose lines nothing else recognized (and the setting lines, for what was tried);
it keeps what they say: the symptom the reporter saw, the scale (works on one node, fails across nodes),
the settings tried and whether they helped, and a busbw said to exceed the network's rate. A report
"describes NCCL trouble" when a line names NCCL (or RDMA, a collective, ...) beside a trouble word; only
then do its lines count as recognized, so a lone "NCCL" in an unrelated text is still refused. The symptom
the user gave (--symptom) is such a trouble word for the first line that names NCCL.

The candidates read from words are always low confidence and never outrank a line-read one
(evidence/differential.py). env.py keeps ignoring assignments in prose for the job's settings: here
they are what the reporter TRIED, with the outcome word beside them.
"""

from __future__ import annotations

import re

from allreduce_doctor.evidence import suspects
from allreduce_doctor.evidence.report_words_table import Launcher, Situation, Table, WordCandidate, table
from allreduce_doctor.evidence.signatures import SYMPTOMS
from allreduce_doctor.parsers.nccl_env import PROMPT_RE

MAX_LINES = 1000  # prose lines read at most (~25 us each): a report's words come first, a log's stray lines after
MAX_KEPT = 16  # statements kept of each sort
NEAR = 2  # prose lines from a title's trouble words to the sentence that names NCCL
FROM_WORDS = "from the report's words only: no NCCL output line"
WORDS = "from the report's words"
_VAR_RE = re.compile(r"\b(NCCL_[A-Z0-9_]+)\s*=\s*([^\s`'\",;)\]]+)")
_ASSIGNED_RE = re.compile(r"^(?:[A-Za-z_]\w*=\S*\s+)+")  # NCCL_DEBUG=INFO torchrun ...: the command after them
# A line that names NCCL, a collective or a tool whose output the reader takes (evidence/tools.py): a text with
# one is never refused (issue 29: "No text that names NCCL, a collective, or one of these tools is refused"). Read
# with nothing else, it gets no candidate and the paste that would decide (differential.COLLECT).
NAMES_RE = re.compile(
    r"\b(?:NCCL|RCCL)|\bnccl\b|NCCL_[A-Z0-9_]+|nccl-tests|\ball[-_ ]?(?:reduces?|gathers?)\b|\breduce[-_ ]?scatter\b"
    r"|\bcollectives?\b|\b(?:ibstatus|ibstat|ibv_devinfo|ibv_devices|show_gids|ibdev2netdev|perfquery|smpquery"
    r"|ibportstate|mlnx_qos|fi_info|ulimit|lsmod|nvidia-smi|nvidia_peermem|nv_peer_mem|hostNetwork|IPC_LOCK)\b"
    r"|\brdma (?:statistic|link)\b|\bdcb (?:pfc|app)\b|/dev/shm\b|\brdma/\w|--shm-size|\b(?:docker|podman) run\b")
MAX_NAMED = 16  # lines kept that only name NCCL or a tool


def _quote(text: str) -> str:
    from allreduce_doctor.redact import redact_text  # a pasted line is shown back: secrets redacted first

    text = " ".join(text.split())
    return '"' + redact_text(text if len(text) <= 120 else text[:117] + "...") + '"'


class ReportWords:
    """What the prose lines of one reading say (bounded in size)."""

    def __init__(self, told: str | None = None) -> None:
        self.told = told  # the symptom the user gave (--symptom): it is the trouble of a text that names NCCL
        self.lines = 0
        self.trouble: list[dict] = []  # {source, symptom, quote}: a line naming NCCL beside a trouble word
        self.scale: dict[str, dict] = {}  # one_works / multi_node -> {source, quote}
        self.container: str | None = None
        self.busbw_words = False
        self.busbw_above: dict | None = None
        self.tried: list[dict] = []  # {var, value, outcome, source, quote}
        self.said: dict[str, dict] = {}  # situation id (a `match` row) -> {source, quote}
        self.context: dict[str, dict] = {}  # "platform.amd_cpu" -> {source, quote} (evidence/suspects.py)
        self._kept: list[int] = []  # line numbers of this file that said something
        self._named: list[int] = []  # line numbers of this file that name NCCL, a collective or a tool (NAMES_RE)
        self._open: list[dict] = []  # settings tried on the previous line whose outcome it did not say
        self._loose: tuple | None = None  # (line count, entry, lineno): a title's trouble words, no NCCL word yet
        self._launcher: Launcher | None = None  # the launcher whose command line goes on (`\` at its end)

    def read(self, text: str, where: str, lineno: int | None = None) -> None:
        """One prose line; `lineno` when it may count as recognized (a line nothing else placed)."""
        if self.lines >= MAX_LINES:
            return
        self.lines += 1
        t = table()
        said = self._tried(t, text, where)
        topic = t.topic.search(text) is not None
        if topic or self.lines == 1:  # a title's trouble words count beside the sentence that names NCCL
            symptom = next((name for name, pattern in t.symptoms if pattern.search(text)), None)
            if symptom or t.trouble.search(text):
                entry = {"source": where, "symptom": symptom, "quote": _quote(text)}
                if topic:
                    said |= self._add_trouble(entry)
                else:
                    self._loose = (self.lines, entry, lineno)
            elif topic and self.told and not self.trouble:  # the user said what went wrong; the text names NCCL
                said |= self._add_trouble({"source": where, "symptom": None, "quote": _quote(text)})
        if topic and self._loose is not None and self.lines - self._loose[0] <= NEAR:
            if self._add_trouble(self._loose[1]) and self._loose[2] is not None:
                self._kept.append(self._loose[2])
            self._loose = None
        if topic:
            for sit in t.situations:
                if sit.pattern is not None and sit.id not in self.said and sit.pattern.search(text):
                    self.said[sit.id] = {"source": where, "quote": _quote(text)}
                    said = True
        for name, pattern in t.scale:
            if name not in self.scale and pattern.search(text):
                self.scale[name] = {"source": where, "quote": _quote(text)}
                said = True
        scale = self._launched(t, text)
        if scale is not None and scale not in self.scale:
            self.scale[scale] = {"source": where, "quote": _quote(text)}
            said = True
        said |= suspects.read_words(text, where, self.context)
        if self.container is None and t.container.search(text):
            self.container = where
        if not self.busbw_words and t.busbw_words.search(text):
            self.busbw_words = True
        if self.busbw_above is None and t.busbw_above.search(text):
            self.busbw_above = {"source": where, "quote": _quote(text)}
            said = True
        if said and lineno is not None and len(self._kept) < 256:
            self._kept.append(lineno)
        if lineno is not None and len(self._named) < MAX_NAMED and NAMES_RE.search(text):
            self._named.append(lineno)

    def _launched(self, t: Table, text: str) -> str | None:
        """The scale a launcher's own flags give on this line (multi_node: more than one node, one_node: one),
        on the launcher's command line or a line that continues it; None when it names no count."""
        line = text.strip()
        launcher, self._launcher = self._launcher, None
        if launcher is None:
            command = _ASSIGNED_RE.sub("", PROMPT_RE.sub("", line, count=1))
            launcher = next((lc for lc in t.launchers if lc.command.match(command)), None)
            if launcher is None:
                return None
        if line.endswith("\\"):
            self._launcher = launcher  # the next line holds more of its flags
        nodes = None
        if launcher.nodes is not None and (m := launcher.nodes.search(line)):
            counts = [int(g) for g in m.groups() if g]  # the count, or MIN and MAX
            least, most = counts[0], counts[-1]
            nodes = least if least > 1 or most == 1 else None  # MIN 1 with a larger MAX: one node or more
        elif launcher.hosts is not None and (m := launcher.hosts.search(line)):
            nodes = len({h.split(":")[0] for h in m.group(1).split(",") if h.split(":")[0]})
        elif launcher.hostfile is not None and launcher.hostfile.search(line):
            nodes = 2  # a file of hosts: the job spans nodes (without one it runs on the local host)
        elif launcher.one_node is not None and launcher.one_node.search(line):
            nodes = 1
        return None if not nodes else "multi_node" if nodes > 1 else "one_node"

    def _add_trouble(self, entry: dict) -> bool:
        if len(self.trouble) >= MAX_KEPT:
            return False
        self.trouble.append(entry)
        return True

    def _tried(self, t: Table, text: str, where: str) -> bool:
        """Settings tried on this line, with the outcome beside them (or on the next line)."""
        found = []
        for m in _VAR_RE.finditer(text):
            row = next((r for r in t.tried if r.var == m.group(1)), None)
            value = m.group(2).strip("'\"").rstrip(".:!?")  # "I tried NCCL_SHM_DISABLE=1."
            if row is not None and (not row.values or value in row.values):
                found.append((row, value))
        for row in t.tried:
            if row.words is not None and row.words.search(text) and all(r is not row for r, _ in found):
                found.append((row, row.values[0] if row.values else ""))
        if not found and not self._open:
            return False
        outcome = "not_helped" if t.not_helped.search(text) else "helped" if t.helped.search(text) else None
        if not found:
            if outcome and self._open:  # "Tried NCCL_P2P_DISABLE=1." then "Still hangs."
                for entry in self._open:
                    entry["outcome"] = outcome
                self._open = []
                return True
            self._open = []
            return False
        entries = []
        for row, value in found:
            if len(self.tried) < MAX_KEPT:
                entry = {"var": row.var, "value": value, "outcome": outcome, "source": where, "quote": _quote(text)}
                self.tried.append(entry)
                entries.append(entry)
        self._open = [] if outcome else entries
        return True

    def end_file(self, report) -> None:
        """Mark the lines of the file just read that said something, once the reading describes trouble."""
        kept, self._kept = self._kept, []
        named, self._named = self._named, []
        self._open = []
        if self.describes_trouble():
            for lineno in kept:
                report.place_late("report_words", lineno)
        elif report.recognized == 0:  # nothing else read: the lines that name NCCL or a tool keep it from refusal
            for lineno in named:
                report.place_late("report_words", lineno)

    def describes_trouble(self) -> bool:
        return bool(self.trouble) or (self.busbw_above is not None and self.busbw_words)

    def summary(self) -> dict | None:
        """What the words say (log.job's `report`), or None when they describe no NCCL trouble."""
        if not self.describes_trouble():
            return None
        told = [e for e in self.trouble if e["symptom"]]
        first = min(told, key=lambda e: SYMPTOMS.index(e["symptom"]), default=None)
        return {"symptom": first["symptom"] if first else None, "symptom_source": first["source"] if first else None,
                "trouble": self.trouble[:4], "scale": dict(self.scale), "container": self.container,
                "tried": list(self.tried), "said": dict(self.said), "context": dict(self.context),
                "busbw_above_rate": self.busbw_above if self.busbw_words else None}


# -- what the words mean for the ranked differential ------------------------------------------------

def candidates(words: dict | None, symptom: str | None, from_lines: bool) -> list[tuple[str, list[str], str]]:
    """(cause, supporting lines, next step) read from the words, most likely first: a setting the reporter
    tried that helped (their own experiment), then the situations the report describes; a candidate a
    setting that did not help speaks against goes last. `from_lines`: the text has NCCL lines too."""
    if not words:
        return []
    t = table()
    prefix = WORDS if from_lines else FROM_WORDS
    out: dict[str, tuple[list[str], str]] = {}

    def add(cand: WordCandidate, why: str, lines: list[dict]) -> None:
        if cand.needs == "container" and not words.get("container"):
            return
        if cand.cause not in out:
            shown = dict.fromkeys(f"{e['source']}: {e['quote']}" for e in lines)  # one line may say both
            out[cand.cause] = ([f"{prefix} ({why})", *shown], cand.next_step)

    for entry in words.get("tried") or []:
        row = next((r for r in t.tried if r.var == entry["var"]), None)
        if row is not None and entry["outcome"] == "helped":
            for cand in row.candidates:
                add(cand, f"{_setting(entry)} helped", [entry])
    for sit in t.situations:
        lines = _situation_lines(sit, words, symptom)
        if lines:
            for cand in sit.candidates:
                add(cand, sit.says, lines)
    spoken = against(words)
    order = sorted(out, key=lambda cause: cause in spoken)  # stable: the uncontradicted keep their order
    return [(cause, *out[cause]) for cause in order]


def _situation_lines(sit: Situation, words: dict, symptom: str | None) -> list[dict]:
    """The lines that show the situation, or [] when the words do not describe it."""
    if sit.pattern is not None:
        said = (words.get("said") or {}).get(sit.id)
        return [said] if said else []
    trouble = words.get("trouble") or []
    if not trouble or (sit.symptoms and symptom is not None and symptom not in sit.symptoms):
        return []  # a situation is trouble at a scale: a busbw question on two nodes is none
    scale = [words["scale"][s] for s in sit.scale if s in (words.get("scale") or {})]
    if (sit.scale and not scale) or set(sit.unless) & set(words.get("scale") or {}):
        return []
    told = [e for e in trouble if e["symptom"] in sit.symptoms] or trouble
    return told[:1] + scale[:1]


def against(words: dict | None) -> dict[str, list[str]]:
    """cause -> the lines of settings tried that did not help, of the causes that setting would have fixed."""
    out: dict[str, list[str]] = {}
    if not words:  # most texts: the table is not read (its patterns cost a few ms to compile)
        return out
    rows = {r.var: r for r in table().tried}
    for entry in words.get("tried") or []:
        row = rows.get(entry["var"])
        if row is None or not row.against or entry["outcome"] != "not_helped":
            continue
        for cand in (c for c in row.candidates if c.against):
            out.setdefault(cand.cause, []).append(
                f"{entry['source']}: {WORDS}: {_setting(entry)} was tried and did not help: {entry['quote']}")
    return out


def notes(words: dict | None) -> list[str]:
    """What the words rule out, and a busbw above the network's rate, as lines for the Diagnosis."""
    out: list[str] = []
    if not words:
        return out
    rows = {r.var: r for r in table().tried}
    for entry in words.get("tried") or []:
        row = rows.get(entry["var"])
        if row is not None and row.against and entry["outcome"] == "not_helped":
            causes = ", ".join(dict.fromkeys(c.cause for c in row.candidates if c.against))
            out.append(f"{entry['source']}: {WORDS}: {_setting(entry)} did not help, which speaks against {causes}")
    above = words.get("busbw_above_rate")
    if above:
        out.append(f"{above['source']}: {WORDS}: {table().busbw_note}")
    return out


def _setting(entry: dict) -> str:
    return f"{entry['var']}={entry['value']}" if entry["value"] else entry["var"]
