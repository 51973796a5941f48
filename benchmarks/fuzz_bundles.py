"""Fuzz run (issue 15): mutated bundles and hostile exports, counted by outcome.

    python benchmarks/fuzz_bundles.py [--bundles 500] [--exports 100] [--seed 15]

Bundles: a scenario bundle (healthy and faulty ones, recorded now by the current writer and as
stored in tests/fixtures, written by older ones) with one damage each: a member deleted,
emptied, cut or replaced by junk, members added, a folder or index.json or manifest.json removed,
a JSON field of the wrong type, a sample dropped. Each is diagnosed in-process through the real
Session. What the mutation touched is judged by the bundle's own index: damaging (manifest,
index, or a member the index says a probe read), inert (nothing the index says was read). An
older index lists no members, so the diagnosis itself is asked: what it read of the bundle
(Bundle._recorded, traced), and with the touched members it read (or the dropped glob) made
unknown, does the verdict change? Damaging when it does (a decision reads them), or when it read
a member the recording never wrote; inert when it read none of them or its verdict stays.
Passes when no mutation raises anything but a DoctorError (one line), none damaging is "healthy"
and none inert changes the verdict (a refusal aside: refusing a changed bundle is never wrong).
Exports: a stored diagnosis with hostile text (ESC/OSC, C1, bidi, newlines, @everyone, Jira h1.,
Markdown headings and links) in random fields, rendered in every format. Passes when none raises,
none holds a raw control character and no line starts a heading, quote or list of the payload's.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import re
import shutil
import sys
import tarfile
import tempfile
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from allreduce_doctor.doctor import Doctor  # noqa: E402
from allreduce_doctor.errors import DoctorError  # noqa: E402
from allreduce_doctor.export import render_export  # noqa: E402
from allreduce_doctor.hosts.snapshot import SnapshotHost  # noqa: E402
from allreduce_doctor.sanitize import terminal  # noqa: E402
from allreduce_doctor.snapshot.bundle import Bundle  # noqa: E402
from allreduce_doctor.session import Options, Session  # noqa: E402

SCENARIOS = ROOT / "tests" / "fixtures" / "scenarios"
BASES = ("roce-healthy", "ib-healthy", "roce-pfc-off", "ib-port-down")
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


# --- bundles ------------------------------------------------------------------------------
def _members(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _rewrite(path: Path, data: bytes) -> None:
    path.unlink()  # the tree is hard links to the original: never write into one
    path.write_bytes(data)


def _edit_json(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    _rewrite(path, json.dumps(doc).encode())


def _pick(rng: random.Random, root: Path, under: str = "") -> Path:
    found = [p for p in _members(root) if str(p.relative_to(root)).startswith(under)] or _members(root)
    return rng.choice(found)


def _wrong_type(rng: random.Random, doc: dict) -> None:
    key = rng.choice(["reads", "globs", "links", "which", "processes"])
    doc[key] = rng.choice(["x", 3, [1], {"0": "x"}, True])


def _drop_glob(rng: random.Random, doc: dict) -> None:
    globs = doc["globs"]["0"]
    globs.pop(rng.choice(sorted(globs)))


def _add_members(rng: random.Random, root: Path) -> None:
    """Members the recording never wrote: a config the index records as absent, and junk."""
    (root / "files" / "etc").mkdir(parents=True, exist_ok=True)
    (root / "files" / "etc" / "nccl.conf").write_text("NCCL_IB_DISABLE=1\n")
    (root / "files" / "zz-added").write_bytes(rng.randbytes(40))


MUTATIONS = {
    "delete a member": lambda rng, root: _pick(rng, root).unlink(),
    "delete a file read": lambda rng, root: _pick(rng, root, "files/").unlink(),
    "delete a command record": lambda rng, root: _pick(rng, root, "commands/").unlink(),
    "empty a member": lambda rng, root: _rewrite(_pick(rng, root), b""),
    "cut a member": lambda rng, root: (lambda p: _rewrite(p, p.read_bytes()[: rng.randrange(max(p.stat().st_size, 1))]))(_pick(rng, root)),
    "junk in a member": lambda rng, root: _rewrite(_pick(rng, root), rng.randbytes(rng.randrange(1, 400))),
    "delete a folder": lambda rng, root: shutil.rmtree(root / rng.choice(["files", "commands", "samples", "files/sys", "files/proc"]), ignore_errors=True),
    "delete index.json": lambda rng, root: (root / "index.json").unlink(),
    "delete manifest.json": lambda rng, root: (root / "manifest.json").unlink(),
    "only manifest.json": lambda rng, root: [shutil.rmtree(p) if p.is_dir() else p.unlink() for p in root.iterdir() if p.name != "manifest.json"],
    "cut index.json": lambda rng, root: (lambda p: _rewrite(p, p.read_bytes()[: rng.randrange(p.stat().st_size)]))(root / "index.json"),
    "wrong type in index.json": lambda rng, root: _edit_json(root / "index.json", lambda d: _wrong_type(rng, d)),
    "empty index.json": lambda rng, root: _rewrite(root / "index.json", b"{}"),
    "drop a glob of sample 0": lambda rng, root: _edit_json(root / "index.json", lambda d: _drop_glob(rng, d)),
    "drop the second sample": lambda rng, root: _edit_json(root / "manifest.json", lambda d: d.update(samples=d["samples"][:1])),
    "add members": _add_members,
}


# --- what a mutation touched, judged by the bundle's own index ------------------------------
def _tree(root: Path) -> dict[str, tuple]:
    return {str(p.relative_to(root)): (p.stat().st_ino, p.stat().st_size) for p in _members(root)}


def touched(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    """Members deleted, added or rewritten (a rewrite is a new inode: the tree is hard links)."""
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


DAMAGING, INERT, CANNOT_TELL = "damaging", "inert", "cannot tell (older index)"
# an older bundle's inert mutations, by why: the diagnosis never asked for what was touched, or
# it did and the verdict stays with it unknown (no decision on the path reads it)
NEVER_READ, NO_DECISION = "inert: never read", "inert: no decision reads it"
INERTS = (INERT, NEVER_READ, NO_DECISION)


def classify(index: dict, names: list[str], before: dict) -> str:
    """Damaging: the mutation touched manifest.json, index.json or a member the index says a probe
    read (an index with `members` lists every one). An older index lists no members: a member
    added where it records the read as failed is inert (the entry answers); of a member deleted
    or rewritten it cannot tell, and decided_by() asks the diagnosis itself."""
    if not names:
        return INERT
    if {"manifest.json", "index.json"} & set(names):
        return DAMAGING
    listed = index.get("members")
    if listed is not None:
        return DAMAGING if any(name in listed for name in names) else INERT
    if any(name in before for name in names):
        return CANNOT_TELL
    reads = index.get("reads", {})
    return INERT if all(_sample_of(n)[1].startswith("files/") and _sample_of(n)[1][5:] in reads.get(_sample_of(n)[0], {})
                        for n in names) else CANNOT_TELL


def _sample_of(name: str) -> tuple[str, str]:
    """('N', the rest) of a member name: samples/N/files/... or files/... (sample 0)."""
    if not name.startswith("samples/"):
        return "0", name
    sample, _, rest = name[8:].partition("/")
    return sample, rest


UNREAD = {"status": "error", "reason": "damaged (fuzz: made unknown)"}


def decided_by(doctor, base: Path, names: list[str], before: dict, work: Path, expected: str) -> str:
    """For an older bundle, which cannot vouch for its members: whether a decision reads what the
    mutation touched, asked of the diagnosis itself. The touched members are made unknown (deleted,
    their reads recorded as failed); the verdict of that copy differs from the base's exactly when
    some step on the path needed one of them (unknown on the path is inconclusive,
    docs/design-rules.md): damaging then, inert (no decision reads it) otherwise. A dropped glob is its own
    unknown copy (hosts/snapshot.py GlobNotRecorded): the mutated bundle is diagnosed as it is."""
    existing = [n for n in names if n in before]
    root = work / "unknown"
    shutil.copytree(base, root, copy_function=os.link)
    try:
        index = json.loads((root / "index.json").read_text())
        for name in existing:
            (root / name).unlink()
            sample, rest = _sample_of(name)
            if rest.startswith("files/"):
                index.setdefault("reads", {}).setdefault(sample, {})[rest[5:]] = dict(UNREAD)
        _rewrite(root / "index.json", json.dumps(index).encode())
        verdict = _verdict(doctor, root)[0]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return NO_DECISION if verdict == expected else DAMAGING


# --- the bases: today's recordings and the stored fixtures (older bundles) ------------------
def _unpack(archive: Path, root: Path) -> Path:
    root.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    return root


def _bases(work: Path) -> dict[tuple[str, str], Path]:
    """(scenario, how) -> unpacked bundle: recorded now by the current writer, and as stored."""
    from tests.scenarios.build import SCENARIOS as NODES
    from tests.scenarios.build import record

    bases = {}
    for name in BASES:
        fresh = work / f"{name}.tar.gz"
        record(NODES[name], fresh)
        bases[(name, "recorded")] = _unpack(fresh, work / f"{name}.recorded")
        bases[(name, "stored")] = _unpack(SCENARIOS / name / "bundle.tar.gz", work / f"{name}.stored")
    return bases


READ: set[str] = set()  # the members the last diagnosis asked its bundle for
EXAMPLES: dict[tuple, list[str]] = {}  # (how, kind, verdict) -> the mutations counted there


def _traced_recorded(self, name: str, _recorded=Bundle._recorded):
    READ.add(name)
    return _recorded(self, name)


# What a diagnosis read, asked of the reader itself: every read (member() for bytes and JSON,
# text() for a file's text, which skips member() to decode a view without a copy) asks _recorded.
Bundle._recorded = _traced_recorded


def _verdict(doctor, root: Path) -> tuple[str, str]:
    READ.clear()
    try:
        session = Session(doctor, SnapshotHost(root), Options("auto", 0, {}, bundle=str(root)))
        return session.diagnose().verdict, ""
    except DoctorError as err:
        return ("refused (one line)" if "\n" not in str(err) else "refused (several lines)"), ""
    except Exception:  # noqa: BLE001 - what the run counts
        return "traceback", traceback.format_exc(limit=3)


def fuzz_bundles(count: int, seed: int, work: Path) -> tuple[Counter, list[str]]:
    """Outcomes counted by (how the base was written, damaging/inert, verdict). Fails on a
    traceback, a refusal over several lines, a healthy verdict on damaging input, and an inert
    mutation that changed the verdict."""
    rng = random.Random(seed)
    doctor = Doctor.load()
    bases = _bases(work)
    expected = {key: _verdict(doctor, root)[0] for key, root in bases.items()}
    indexes = {key: json.loads((root / "index.json").read_text()) for key, root in bases.items()}
    trees = {key: _tree(root) for key, root in bases.items()}
    outcomes: Counter = Counter()
    failures: list[str] = []
    names, keys = sorted(MUTATIONS), sorted(bases)
    for i in range(count):
        key, name = rng.choice(keys), names[i % len(names)]
        root = work / f"m{i}"
        shutil.copytree(bases[key], root, copy_function=os.link)
        try:
            MUTATIONS[name](rng, root)
        except (FileNotFoundError, IndexError, ValueError, KeyError):
            pass  # nothing of that kind in this bundle: the copy is diagnosed as it is
        changed = touched(trees[key], _tree(root))
        kind = classify(indexes[key], changed, trees[key])
        verdict, trace = _verdict(doctor, root)
        if indexes[key].get("members") is None:  # an older bundle: ask the diagnosis what it read
            read = READ & set(changed)
            if name == "drop a glob of sample 0":  # the dropped glob is unknown: its own unknown copy
                kind = NO_DECISION if verdict == expected[key] else DAMAGING
            elif kind == CANNOT_TELL and not read:  # the diagnosis never asked for what was touched
                kind = NEVER_READ
            elif kind == CANNOT_TELL and any(n in trees[key] for n in read):
                kind = decided_by(doctor, bases[key], sorted(read), trees[key], work, expected[key])
            elif kind == CANNOT_TELL:  # read members the recording never wrote: the index cannot vouch
                kind = DAMAGING
        where = f"{key[0]} ({key[1]}) / {name} {' '.join(changed[:3])}"
        if trace or verdict == "refused (several lines)":
            failures.append(f"{where}: {verdict} {trace}")
        elif verdict == "healthy" and kind == DAMAGING:
            failures.append(f"{where}: healthy on damaging input")
        elif kind in INERTS and verdict not in (expected[key], "refused (one line)"):  # refusing a changed bundle is never wrong
            failures.append(f"{where}: inert mutation changed {expected[key]} to {verdict}")
        outcomes[(key[1], kind, verdict)] += 1
        EXAMPLES.setdefault((key[1], kind, verdict), []).append(where)
        shutil.rmtree(root, ignore_errors=True)
    return outcomes, failures


# --- exports ------------------------------------------------------------------------------
PAYLOADS = [
    "gpu\x1b]0;pwned\x07\x1b[2J", "x\nINJ heading", "\nh1. INJ", "\n# INJ", "\n- INJ", "\n> INJ", "@everyone",
    "[INJ](http://evil.example)", "{code}INJ{code}", "a | b || c", "`tick`\n# INJ", "\x9b2J", "\u202eINJ",
    "h1. INJ", "bq. INJ", "# INJ", "* INJ", "- INJ", "<script>INJ</script>", "\r\nINJ\r", "{noformat}", "```\n# INJ",
]
FORMATS = ("markdown", "github", "jira", "jira-adf", "json")
# a line the payload would start: Markdown heading, quote or list; Jira heading, quote or list
STARTED = re.compile(r"^\s*(#+ |> |[-*+] |h[1-6]\. |bq\. |\*+ |#+ )?\s*INJ")


def _strings(value, path=()):
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, path + (i,))


def _set(doc, path, text) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = text


def _outside_blocks(text: str):
    """The lines that are markup: not inside a code fence, {noformat} or <details> block."""
    inside = ""
    for line in text.splitlines():
        if inside:
            if line.startswith(inside) or (inside == "<details>" and line.startswith("</details>")):
                inside = ""
            continue
        if line.startswith("```"):
            inside = line[: len(line) - len(line.lstrip("`"))]
        elif line.startswith("{noformat}"):
            inside = "{noformat}"
        elif line.startswith("<details>"):
            inside = "<details>"
        else:
            yield line


def fuzz_exports(count: int, seed: int) -> tuple[Counter, list[str]]:
    from tests.export.goldens import stored_diagnosis

    rng = random.Random(seed)
    bases = {name: stored_diagnosis(name) for name in ("roce-pfc-off", "ib-healthy", "ib-port-down")}  # the kept goldens
    outcomes: Counter = Counter()
    failures: list[str] = []
    for i in range(count):
        name = rng.choice(sorted(bases))
        doc = copy.deepcopy(bases[name])
        paths = list(_strings(doc))
        for path in rng.sample(paths, min(len(paths), 8)):
            _set(doc, path, rng.choice(PAYLOADS) + rng.choice(["", " tail", "\n" + rng.choice(PAYLOADS)]))
        for fmt in FORMATS:
            try:
                text = render_export(copy.deepcopy(doc), fmt)
            except DoctorError:
                outcomes["refused (one line)"] += 1
                continue
            except Exception:  # noqa: BLE001 - what the run counts
                outcomes["traceback"] += 1
                failures.append(f"export {i} {fmt}: {traceback.format_exc(limit=3)}")
                continue
            shown = text if fmt in ("markdown", "github", "jira") else terminal(text)
            bad = RAW_CONTROL.search(shown) or (fmt in ("markdown", "github", "jira")
                                                and any(STARTED.match(line) for line in _outside_blocks(text)))
            outcomes["injected" if bad else "clean"] += 1
            if bad:
                failures.append(f"export {i} {fmt}: {[line for line in _outside_blocks(text) if STARTED.match(line)][:3] or RAW_CONTROL.search(shown)}")
    return outcomes, failures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bundles", type=int, default=500)
    p.add_argument("--exports", type=int, default=100)
    p.add_argument("--seed", type=int, default=15)
    p.add_argument("--examples", type=int, default=0, metavar="N", help="print N mutations of each outcome")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fuzz-bundles-") as work:
        bundle_outcomes, bundle_failures = fuzz_bundles(args.bundles, args.seed, Path(work))
    export_outcomes, export_failures = fuzz_exports(args.exports, args.seed)
    print(f"{args.bundles} mutated bundles (how the base was written, mutation, verdict):")
    for (how, kind, verdict), n in sorted(bundle_outcomes.items()):
        print(f"  {how:9} {kind:28} {verdict:20} {n}")
        for where in EXAMPLES[(how, kind, verdict)][:args.examples]:
            print(f"      e.g. {where}")
    print(f"{args.exports} hostile exports x {len(FORMATS)} formats: {dict(sorted(export_outcomes.items()))}")
    for line in (bundle_failures + export_failures)[:20]:
        print("FAIL", line)
    return 1 if bundle_failures or export_failures else 0


if __name__ == "__main__":
    sys.exit(main())
