"""How much of NCCL's own WARN vocabulary the signature table reads (issue 12, item 1).

    python benchmarks/signature_coverage.py [--repo PATH] [--tag TAG ...] [--list] [--info] [--json]

Every WARN(...) format string (and every INFO(...) whose format has a failure word) is read from
NCCL's src/ at each tag, straight from a git mirror (`git cat-file`, no network, no work tree).
Each format is rendered with plausible values (%s -> a word, %d -> 1, %p -> 0x7f...), a macro's
parameters with each argument the file passes it (misc/ibvwrap.cc's `"Call to " name " failed"`),
and put in the line NCCL prints (`host:1:2 [0] FILE:LINE NCCL WARN MSG`; `FILE:LINE (func)` where
the tag's debug.cc prints the function, 2.30.7+). The line goes through the tool's own reader
(NcclLog.feed_quiet, which classifies with nccl_errors.classify): a WARN is classified when it
lands in a signature kind, unclassified when it lands in `warn_other` (read, but naming no cause).
A format with no words of its own (`WARN("%s", msg)`) says nothing to classify: it is counted as
opaque and left out of the ratio. An INFO counts when it reports a failure or a fallback NCCL goes on
after (INFO_FAILURE_RE); it is read when it lands in a kind (most INFO lines that match the words are
init chatter, and stay unread); the totals give those of NCCL's core files (CORE_INFO) apart.

Prints one line per source file (classified/WARNs at each tag), the totals per tag, and with
--list the unclassified messages of each tag. Deterministic: the same mirror gives the same figures.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

MIRROR = Path("/work/.mirror/NVIDIA+nccl/repo")
# 2.4 to the newest tag read; v2.18.6-1 and v2.27.7-1 are the last of their series.
TAGS = ("v2.4.8-1", "v2.12.12-1", "v2.18.6-1", "v2.21.5-1", "v2.27.7-1", "v2.30.7-1")
SOURCE_EXT = (".cc", ".c", ".cu", ".cpp", ".h", ".hpp", ".cuh")
# The words that make an INFO line a failure report (the reader's own hint words, and a few more), or a
# fallback NCCL reports and goes on after (`falling back`, `disabled`, `not supported`, `skipped`).
INFO_FAILURE_RE = re.compile(r"fail|error|unable|cannot|can't|could not|couldn't|refused|timed out|timeout|"
                             r"not found|no device|abort|fall(?:ing)? ?back|disabl|not supported|unsupported|"
                             r"skipped|doesn't exist", re.IGNORECASE)
# Where NCCL's failure and fallback INFO lines that name a cause live (the transports, the wrappers of
# libibverbs / CUDA / NVML, init, topology and the plugin loader); RAS, the profiler, GIN's resiliency
# bookkeeping and the memory manager print theirs elsewhere.
CORE_INFO = ("src/transport/", "src/misc/", "src/init.cc", "src/graph/", "src/net.cc", "src/plugin/net")
_LEXEME_RE = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', re.DOTALL)
_CALL_RE = re.compile(r"(?<![\w.\"#])(WARN|INFO)\s*\(")
_DEFINE_RE = re.compile(r"#\s*define\s+(\w+)\(([^)]*)\)")
_SPEC_RE = re.compile(r"%[-+ #0]*(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|L|z|j|t|q)?([diouxXeEfFgGaAcspn%])")
_INTTYPES = {"PRIu64": "lu", "PRId64": "ld", "PRIx64": "lx", "PRIi64": "li", "PRIu32": "u", "PRId32": "d",
             "PRIx32": "x", "PRIX64": "lX"}
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'", "0": ""}
HOST_PREFIX = "host:1:2 [0] "


# -- reading NCCL's source from the mirror -----------------------------------------------------------
def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, timeout=60, check=False)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args[:2])} failed in {repo}: {done.stderr.decode(errors='replace')[:200]}")
    return done.stdout


def read_tree(repo: Path, tag: str) -> dict[str, str]:
    """path -> text of every C/C++ file under src/ at `tag` that calls WARN or INFO."""
    listed = _git(repo, "grep", "-l", "-E", r"\b(WARN|INFO)\s*\(", tag, "--", "src").decode()
    paths = sorted(line.split(":", 1)[1] for line in listed.splitlines() if line.endswith(SOURCE_EXT))
    out = _git(repo, "cat-file", "--batch", stdin="".join(f"{tag}:{p}\n" for p in paths).encode())
    texts, at = {}, 0
    for path in paths:  # `SHA blob SIZE\n<content>\n` per file
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        texts[path] = out[header_end + 1:header_end + 1 + size].decode("utf-8", "replace")
        at = header_end + 1 + size + 1
    return texts


def prints_function(repo: Path, tag: str) -> bool:
    """Whether this tag's WARN prints `FILE:LINE (func) NCCL WARN` (src/debug.cc, 2.30.7+)."""
    try:
        return b"(%s) NCCL WARN" in _git(repo, "show", f"{tag}:src/debug.cc")
    except SystemExit:  # 2.4 keeps its logger in include/debug.h, without the function
        return False


# -- the calls and their formats -----------------------------------------------------------------------
def _code(text: str) -> str:
    """The text with comments blanked (newlines kept, so offsets and line numbers stay)."""
    def blank(m: re.Match) -> str:
        s = m.group(0)
        return s if s[0] in "\"'" else re.sub(r"[^\n]", " ", s)
    return _LEXEME_RE.sub(blank, text)


def _args(code: str, start: int) -> tuple[list[str], int]:
    """The top-level arguments of the call whose '(' is at `start`, and the offset after ')'."""
    depth, args, at, i = 0, [], start + 1, start
    while i < len(code):
        c = code[i]
        if c in "\"'":
            m = _LEXEME_RE.match(code, i)
            i = m.end() if m else i + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(code[at:i].strip())
                return args, i + 1
        elif c == "," and depth == 1:
            args.append(code[at:i].strip())
            at = i + 1
        i += 1
    return args, len(code)


def _unescape(literal: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), literal[1:-1])


def _format(arg: str, params: dict[str, str]) -> str | None:
    """The C format an argument spells (adjacent literals, PRIu64, a macro's parameters), else None."""
    out, pos = [], 0
    for m in re.finditer(r'"(?:\\.|[^"\\])*"|#?\s*\w+', arg):
        if arg[pos:m.start()].strip():
            return None  # an expression, not a literal format
        tok = m.group(0)
        name = tok.lstrip("#").strip()
        if tok.startswith('"'):
            out.append(_unescape(tok))
        elif name in _INTTYPES:
            out.append(_INTTYPES[name])
        elif name in params:
            out.append(params[name])
        else:
            return None
        pos = m.end()
    return "".join(out) if out and not arg[pos:].strip() else None


def _define_at(code: str, pos: int) -> tuple[str, list[str], int] | None:
    """(macro name, parameters, end offset) of the #define a position lies in, else None."""
    line_start = code.rfind("\n", 0, pos) + 1
    while line_start > 0 and code[:line_start - 1].rstrip(" \t").endswith("\\"):
        line_start = code.rfind("\n", 0, line_start - 1) + 1
    m = _DEFINE_RE.match(code, line_start + len(code[line_start:]) - len(code[line_start:].lstrip()))
    if m is None:
        return None
    end = pos
    while True:
        nl = code.find("\n", end)
        if nl < 0 or not code[:nl].rstrip(" \t").endswith("\\"):
            break
        end = nl + 1
    return m.group(1), [p.strip() for p in m.group(2).split(",") if p.strip()], end


def _expansions(code: str, macro: str, params: list[str], skip: tuple[int, int]) -> list[tuple[dict, int]]:
    """({param: the text each invocation passes}, its offset) for each use of a macro in the file."""
    uses = []
    for m in re.finditer(rf"(?<![\w#]){re.escape(macro)}\s*\(", code):
        if skip[0] <= m.start() < skip[1] or re.search(r"#\s*define\s+$", code[:m.start()][-40:]):
            continue  # the macro's own definition
        args, _ = _args(code, m.end() - 1)
        values = {}
        for name, value in zip(params, args):
            lits = re.findall(r'"(?:\\.|[^"\\])*"', value)
            values[name] = "".join(_unescape(x) for x in lits) if lits else value.strip()
        uses.append((values, m.start()))
    return uses


def calls(text: str, shared: dict | None = None) -> list[tuple[str, int, str]]:
    """(level, line, format) of each WARN / INFO call with a literal format; a macro's once per use in
    this file, a header's macro (`shared`, from header_macros) once per use of it here."""
    code = _code(text)
    found = []
    for m in _CALL_RE.finditer(code):
        if re.search(r"#\s*define\s*$", code[code.rfind("\n", 0, m.start()) + 1:m.start()]):
            continue  # the logger's own #define WARN(...)
        level, arg = _call_format(code, m)
        define = _define_at(code, m.start())
        if define is not None and define[1]:
            macro, params, end = define
            if macro in (shared or {}):
                continue  # rendered where it is used
            uses = _expansions(code, macro, params, (code.rfind("#", 0, m.start()), end)) or \
                [({p: p.upper() for p in params}, m.start())]
        else:
            uses = [({}, m.start())]
        for values, at in uses:
            fmt = _format(arg, values)
            if fmt is not None:
                found.append((level, code.count("\n", 0, at) + 1, fmt))
    for macro, (params, level, arg) in (shared or {}).items():
        for values, at in _expansions(code, macro, params, (-1, -1)):
            fmt = _format(arg, values)
            if fmt is not None:
                found.append((level, code.count("\n", 0, at) + 1, fmt))
    return found


def _call_format(code: str, m: re.Match) -> tuple[str, str]:
    level = m.group(1)
    args, _ = _args(code, m.end() - 1)
    return level, args[0] if level == "WARN" else (args[1] if len(args) > 1 else "")


def header_macros(texts: dict[str, str]) -> dict[str, tuple[list[str], str, str]]:
    """macro -> (parameters, level, format argument) of each header #define whose WARN / INFO format
    uses a parameter (include/checks.h SYSCHECK: `"Call to " name " failed"`): __FILE__ is then the
    file that uses it, so its lines are rendered there."""
    out = {}
    for path, text in texts.items():
        if not path.endswith((".h", ".hpp", ".cuh")):
            continue
        code = _code(text)
        for m in _CALL_RE.finditer(code):
            define = _define_at(code, m.start())
            if define is None or not define[1]:
                continue
            level, arg = _call_format(code, m)
            if any(re.search(rf"(?<![\w\"]){re.escape(p)}\b", arg) for p in define[1]):
                out.setdefault(define[0], (define[1], level, arg))
    return out


def render(fmt: str) -> str:
    """A format with plausible values, as its first printed line."""
    def value(m: re.Match) -> str:
        conv = m.group(4)
        if conv == "%":
            return "%"
        if conv == "s":
            return "word"
        if conv == "p":
            return "0x7f3a2c01d2b0"
        if conv in "xX":
            return "1f"
        if conv in "eEfFgGaA":
            return "1.0"
        if conv == "c":
            return "c"
        return "1"
    lines = [part.strip() for part in _SPEC_RE.sub(value, fmt).split("\n")]
    return next((part for part in lines if part), "")


def opaque(fmt: str) -> bool:
    """A format with no words of its own (`%s`, `%s:%d %s`): nothing in it to classify."""
    return len(re.findall(r"[A-Za-z]", _SPEC_RE.sub("", fmt))) < 3


# -- reading the lines with the tool's reader -------------------------------------------------------------
def read_line(line: str) -> str | None:
    """The kind the reader files the line under, else None (a WARN in warn_other, an INFO dropped)."""
    from allreduce_doctor.evidence.nccl import NcclLog

    log = NcclLog()
    log.feed_quiet(line, "coverage:1")
    return next(iter(log.errors), None)


def nccl_line(path: str, line: int, level: str, msg: str, with_function: bool) -> str:
    src = path.removeprefix("src/")
    if level == "INFO":
        return f"{HOST_PREFIX}NCCL INFO {msg}"
    return f"{HOST_PREFIX}{src}:{line}{' (fn)' if with_function else ''} NCCL WARN {msg}"


def coverage(repo: Path, tag: str) -> dict:
    """{files: {path: {warn, classified, opaque, info, info_read, core_info, core_read}}, unclassified: [line],
    kinds: {kind: n}}: core_* count the INFOs of CORE_INFO's files."""
    with_function = prints_function(repo, tag)
    files: dict[str, dict] = {}
    unclassified, info_unread, kinds = [], [], {}
    texts = read_tree(repo, tag)
    shared = header_macros(texts)
    for path, text in texts.items():
        seen = set()
        row = {"warn": 0, "classified": 0, "opaque": 0, "info": 0, "info_read": 0, "core_info": 0, "core_read": 0}
        core = path.startswith(CORE_INFO)
        for level, lineno, fmt in calls(text, shared):
            msg = render(fmt)
            if (level, msg) in seen or not msg or (level == "INFO" and not INFO_FAILURE_RE.search(msg)):
                continue
            seen.add((level, msg))
            if opaque(fmt):
                row["opaque"] += level == "WARN"
                continue
            line = nccl_line(path, lineno, level, msg, with_function)
            kind = read_line(line)
            if kind is not None:
                kinds[kind] = kinds.get(kind, 0) + 1
            if level == "INFO":
                row["info"] += 1
                row["info_read"] += kind is not None
                row["core_info"] += core
                row["core_read"] += core and kind is not None
                if kind is None:
                    info_unread.append(line[len(HOST_PREFIX):])
                continue
            row["warn"] += 1
            row["classified"] += kind is not None
            if kind is None:
                unclassified.append(line[len(HOST_PREFIX):])
        if row["warn"] or row["info"] or row["opaque"]:
            files[path] = row
    return {"files": files, "unclassified": unclassified, "info_unread": info_unread, "kinds": kinds}


def totals(result: dict) -> dict:
    rows = result["files"].values()
    out = {key: sum(r[key] for r in rows)
           for key in ("warn", "classified", "opaque", "info", "info_read", "core_info", "core_read")}
    out["ratio"] = round(out["classified"] / out["warn"], 3) if out["warn"] else 0.0
    return out


def _print(results: dict[str, dict], show_list: bool, show_info: bool) -> None:
    tags = list(results)
    paths = sorted({p for r in results.values() for p in r["files"]})
    width = max(len(p) for p in paths) if paths else 10
    print(f"{'source file (classified/WARNs)':<{width}}  " + "  ".join(f"{t:>11}" for t in tags))
    for path in paths:
        cells = []
        for tag in tags:
            row = results[tag]["files"].get(path)
            cells.append(f"{row['classified']}/{row['warn']}" if row and row["warn"] else "-")
        if any(c != "-" for c in cells):
            print(f"{path:<{width}}  " + "  ".join(f"{c:>11}" for c in cells))
    print()
    for tag in tags:
        t = totals(results[tag])
        print(f"{tag}: WARNs {t['warn']}, classified {t['classified']} ({t['ratio']:.1%}), unclassified "
              f"{t['warn'] - t['classified']}, opaque {t['opaque']}; failure INFOs {t['info']}, read {t['info_read']} "
              f"(transport, misc, init, graph, net plugin: {t['core_read']}/{t['core_info']})")
    for tag in tags if show_list else ():
        print(f"\n# {tag}: unclassified WARNs ({len(results[tag]['unclassified'])})")
        for line in results[tag]["unclassified"]:
            print(f"  {line}")
        if show_info:
            print(f"# {tag}: failure INFOs not read ({len(results[tag]['info_unread'])})")
            for line in results[tag]["info_unread"]:
                print(f"  {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=MIRROR, help="a git mirror of NVIDIA/nccl")
    parser.add_argument("--tag", action="append", help="a tag to read (repeatable); default: the six of TAGS")
    parser.add_argument("--list", action="store_true", help="list each tag's unclassified WARNs")
    parser.add_argument("--info", action="store_true", help="with --list, the failure INFOs not read too")
    parser.add_argument("--json", action="store_true", help="totals and unclassified lines as JSON")
    args = parser.parse_args(argv)
    if not (args.repo / "HEAD").exists() and not (args.repo / ".git").exists():
        print(f"signature_coverage: no NCCL git mirror at {args.repo} (give --repo PATH)", file=sys.stderr)
        return 2
    results = {tag: coverage(args.repo, tag) for tag in args.tag or TAGS}
    if args.json:
        print(json.dumps({tag: {"totals": totals(r), "unclassified": r["unclassified"], "kinds": r["kinds"]}
                          for tag, r in results.items()}, indent=1, sort_keys=True))
    else:
        _print(results, args.list, args.info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
