"""Run one probe spec against a Host and turn the answers into an Observation."""

from __future__ import annotations

import time
from typing import Any

from allreduce_doctor.errors import ParseError
from allreduce_doctor.hosts.base import FILE_DENIED, FILE_MISSING, FILE_OK, GlobNotRecorded, Host
from allreduce_doctor.observations import ERROR, MISSING, NOT_APPLICABLE, OK, Observation
from allreduce_doctor.parsers import parse
from allreduce_doctor.probes.chain import run_chain
from allreduce_doctor.probes.enumerate import Enumerator, fill
from allreduce_doctor.probes.permission import NEEDS_ROOT, PERMISSION_WORDS
from allreduce_doctor.probes.spec import ProbeSpec

NEVER_LOOKED_UP = "not looked up when the bundle was recorded (it predates this probe)"


class Outcome:
    """The result of one instance: a value or a failure (status + reason)."""

    __slots__ = ("value", "status", "reason", "source")

    def __init__(self, value: Any = None, status: str = OK, reason: str = "", source: str = "") -> None:
        self.value, self.status, self.reason, self.source = value, status, reason, source


def _file_failure(res) -> Outcome:
    if res.status == FILE_MISSING:
        return Outcome(None, MISSING, res.reason or "no such file", res.path)
    if res.status == FILE_DENIED:
        return Outcome(None, MISSING, f"permission denied ({NEEDS_ROOT})", res.path)
    return Outcome(None, ERROR, res.reason or "read failed", res.path)


def _parse(parser: str, text: str, source: str) -> Outcome:
    try:
        return Outcome(parse(parser, text), OK, "", source)
    except ParseError as err:
        return Outcome(None, ERROR, f"parse error: {err}", source)


NOT_RUN = "not run: the time budget was spent"


def run_instance(spec: ProbeSpec, host: Host, item: dict, deadline: float | None = None) -> Outcome:
    """Execute spec for one enumerated item (an empty dict when the probe does not fan out).

    `deadline` (a time.monotonic() value) ends the budget: an instance not started before it is
    missing, and a command's timeout is cut to the time left."""
    if deadline is not None and time.monotonic() >= deadline:
        return Outcome(None, MISSING, NOT_RUN, _template(spec))
    try:
        if spec.kind == "file":
            path = fill(spec.path, item)
            res = host.read(path)
            return _parse(spec.parser, res.text or "", path) if res.ok else _file_failure(res)
        if spec.kind == "files":
            return _run_files(spec, host, item)
        if spec.kind == "glob":
            return _run_glob(spec, host, item)
        if spec.kind == "command":
            return _run_command(spec, host, item, deadline)
        if spec.kind == "chain":
            return run_chain(spec, host, item, deadline, _run_command)
        if spec.kind == "exists":
            paths = [fill(p, item) for p in spec.paths]
            present = [p for p in paths if host.glob(p)]
            return Outcome(bool(present), OK, "", ", ".join(present or paths))
    except KeyError as err:
        return Outcome(None, ERROR, f"template variable {err} not set by the enumerator", spec.location)
    except GlobNotRecorded as err:  # a bundle that never listed it: unknown, not "nothing matches"
        return Outcome(None, MISSING, str(err), _template(spec))
    raise ValueError(f"run_instance cannot run a {spec.kind} probe")


def _run_files(spec: ProbeSpec, host: Host, item: dict) -> Outcome:
    record: dict[str, Any] = {}
    failures: dict[str, str] = {}
    worst = None
    for fname, fspec in spec.fields.items():
        path = fill(fspec.path, item)
        res = host.read(path)
        out = _parse(fspec.parser, res.text or "", path) if res.ok else _file_failure(res)
        record[fname] = out.value
        if out.status != OK:
            failures[fname] = f"{out.status}: {out.reason}"
            worst = worst or out
    if failures:
        record["_failed"] = failures
    if worst is not None and len(failures) == len(spec.fields):
        return Outcome(record, worst.status, worst.reason, worst.source)
    return Outcome(record, OK, "", fill(next(iter(spec.fields.values())).path, item))


# drivers/infiniband/core/sysfs.c show_pma_counter(): a device without a PMA (iWARP, older
# kernels) prints this in every counters/ file. The counter is unavailable (None), not unreadable.
NO_PMA = "N/A (no PMA)"


def _run_glob(spec: ProbeSpec, host: Host, item: dict) -> Outcome:
    pattern = fill(spec.pattern, item)
    paths = host.glob(pattern)
    if not paths:
        return Outcome({}, NOT_APPLICABLE, "nothing matches", pattern)
    values: dict[str, Any] = {}
    read = 0
    for path in paths:  # a counter folder: the bulk of a bundle's files, hence the lean loop
        name = path.rsplit("/", 1)[-1]
        if name in spec.skip:
            continue
        res = host.read(path)
        if res.status != FILE_OK:
            values[name] = None  # listed but unreadable: unknown, never left out (out of mind is "no growth")
            continue
        read += 1
        text = res.text or ""
        if text.strip() == NO_PMA:
            values[name] = None
            continue
        try:
            values[name] = parse(spec.parser, text)
        except ParseError:
            values[name] = None  # a garbled counter is unknown too
    if not read:
        return Outcome({}, MISSING, "no file under the pattern could be read", pattern)
    return Outcome(values, OK, "", pattern)


def _run_command(spec: ProbeSpec, host: Host, item: dict, deadline: float | None) -> Outcome:
    argv = [fill(a, item) for a in spec.argv]
    source = " ".join(argv)
    tool = spec.requires_tool or argv[0]
    if host.which(tool) is None and not argv[0].startswith("/"):
        # Only a bundle can say it never looked the tool up (it predates the probe).
        if getattr(host, "never_looked_up", lambda _name: False)(tool):
            return Outcome(None, MISSING, f"{tool}: {NEVER_LOOKED_UP}", source)
        return Outcome(None, MISSING, f"{tool} is not installed (not on PATH)", source)
    key = f"{spec.id}/{item.get('name', 'all')}"
    timeout = spec.timeout if deadline is None else max(min(spec.timeout, deadline - time.monotonic()), 0.001)
    res = host.run(argv, timeout, key)
    if res.error:
        status = MISSING if res.error in ("not found", "not captured in the bundle") else ERROR
        return Outcome(None, status, f"{argv[0]}: {res.error}", source)
    if res.timed_out:
        return Outcome(None, ERROR, f"timed out after {timeout:.3g}s (killed)", source)
    if res.rc != 0:
        first = (res.stderr.strip() or res.stdout.strip()).splitlines()[:1]
        detail = f": {first[0][:200]}" if first else ""
        if first and any(word in first[0] for word in PERMISSION_WORDS):
            return Outcome(None, MISSING, f"{NEEDS_ROOT} (exit status {res.rc}{detail})", source)
        return Outcome(None, ERROR, f"exit status {res.rc}{detail}", source)
    out = _parse(spec.parser, res.stdout, source)
    if _all_denied(out.value):
        out.status, out.reason = MISSING, f"{NEEDS_ROOT}: {argv[0]} shows <access denied> for every device's capabilities"
    return out


def _all_denied(value: Any) -> bool:
    """lspci -vvv as non-root: config space past the first 64 bytes (the capabilities, where ACS and
    LnkSta live) reads as '<access denied>' (pciutils ls-caps.c; sysfs `config` is 0644 but the
    kernel returns only the header to a reader without CAP_SYS_ADMIN, drivers/pci/pci-sysfs.c)."""
    return (isinstance(value, list) and bool(value)
            and all(isinstance(d, dict) and d.get("access_denied") for d in value))


def prepare(spec: ProbeSpec, host: Host, enum: Enumerator) -> Observation | list[dict]:
    """The items a probe runs over ([{}] when it does not fan out), or the Observation that ends
    it before any instance runs (its required path absent, nothing to fan out over, a glob of
    either that the bundle never recorded)."""
    try:
        if spec.requires_path and not host.glob(spec.requires_path):
            return Observation(spec.provides, [] if spec.foreach else None, NOT_APPLICABLE,
                               spec.requires_path, f"{spec.requires_path} does not exist", spec.id)
        if not spec.foreach:
            return [{}]
        items = enum.items(spec.foreach)
    except GlobNotRecorded as err:
        return Observation(spec.provides, None, MISSING, spec.requires_path or _template(spec), str(err), spec.id)
    if not items:
        title = enum.specs[spec.foreach].title or spec.foreach
        return Observation(spec.provides, [], NOT_APPLICABLE, "", f"no {title} found", spec.id)
    return items


def assemble(spec: ProbeSpec, outcomes: list[tuple[dict, Outcome]], duration: float) -> Observation:
    """One Observation from the outcomes of a probe's instances (in enumeration order)."""
    if not spec.foreach:
        out = outcomes[0][1]
        obs = Observation(spec.provides, out.value, out.status, out.source, out.reason, spec.id)
    else:
        obs = Observation(spec.provides, [instance_record(item, out) for item, out in outcomes],
                          OK, _template(spec), "", spec.id)
        if not any(o.status == OK for _, o in outcomes):
            first = outcomes[0][1]
            obs.status, obs.reason = first.status, first.reason
    obs.duration = round(duration, 4)
    return obs


def run_probe(spec: ProbeSpec, host: Host, enum: Enumerator,
              deadline: float | None = None) -> tuple[Observation, list[tuple[dict, Outcome]]]:
    """One sample of a probe, instances one after another: the Observation plus the per-instance
    outcomes (for rates). ProbeRunner runs the instances of many probes concurrently instead."""
    start = time.monotonic()
    prepared = prepare(spec, host, enum)
    if isinstance(prepared, Observation):
        return prepared, []
    outcomes = [(item, run_instance(spec, host, item, deadline)) for item in prepared]
    return assemble(spec, outcomes, time.monotonic() - start), outcomes


def instance_record(item: dict, out: Outcome, key: str = "") -> dict:
    """Item attributes plus the parsed value (merged when a dict, else under 'value')."""
    record = {k: v for k, v in item.items() if not k.startswith("_") and k != "path"}
    if key:
        record[key] = out.value
    elif isinstance(out.value, dict):
        record.update(out.value)
    else:
        record["value"] = out.value
    if out.status != OK:
        record["_status"], record["_reason"] = out.status, out.reason
    return record


def _template(spec: ProbeSpec) -> str:
    return ", ".join(spec.touches())
